package browsertest

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Width and Height are the page's viewport in CSS pixels (and screenshot
// pixels: the scale factor is 1).
const (
	Width  = 1200
	Height = 800
)

// callTimeout bounds one protocol call; it only keeps a hung browser from
// hanging the test, nothing is measured with it.
const callTimeout = time.Minute

// binaries are the names Chromium goes by: Debian's first.
var binaries = []string{"chromium", "chromium-browser", "google-chrome"}

// Find returns the path of the Chromium binary, or "" if there is none.
func Find() string {
	for _, b := range binaries {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium with one page, driven over the
// DevTools protocol.
type Browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	conn    *websocket.Conn
	session string // the page's, for the page-level domains
	stderr  *tail

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	readErr error
	writeMu sync.Mutex
}

type response struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Start starts Chromium with a blank page; it is stopped when the test
// ends. Without Chromium the test is skipped, or fails when CI is set.
func Start(t testing.TB) *Browser {
	t.Helper()
	bin := Find()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed, and CI must run the browser tests: make deps installs it")
		}
		t.Skip("chromium is not installed (make deps installs it): skipping the headless-browser test")
	}
	b := &Browser{t: t, pending: map[int64]chan response{}, stderr: &tail{}}
	b.cmd = exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--mute-audio",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-port=0",
		fmt.Sprintf("--window-size=%d,%d", Width, Height), "about:blank")
	// Its own process group, so that the renderers and helpers it starts
	// go with it.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errPipe, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(b.stop)

	// Chromium says where its DevTools endpoint is on stderr.
	wsURL := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			b.stderr.add(line)
			if u, ok := strings.CutPrefix(line, "DevTools listening on "); ok && !sent {
				wsURL <- strings.TrimSpace(u)
				sent = true
			}
		}
		close(wsURL)
	}()
	var u string
	select {
	case u = <-wsURL:
	case <-time.After(callTimeout):
	}
	if u == "" {
		t.Fatalf("%s did not say where its DevTools endpoint is; stderr:\n%s", bin, b.stderr)
	}
	b.conn, _, err = websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", u, err)
	}
	go b.read()

	var target struct {
		TargetID string `json:"targetId"`
	}
	b.mustCall("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	b.mustCall("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	b.mustCall(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": Width, "height": Height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// read delivers responses to their callers; events are dropped.
func (b *Browser) read() {
	for {
		_, msg, err := b.conn.ReadMessage()
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var r response
		if json.Unmarshal(msg, &r) != nil || r.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.pending[r.ID]
		delete(b.pending, r.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// Call sends a DevTools protocol command to the page and decodes its
// result into result (if not nil).
func (b *Browser) Call(method string, params, result any) error {
	return b.call(b.session, method, params, result)
}

func (b *Browser) call(session, method string, params, result any) error {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: connection lost: %w", method, b.readErr)
	}
	b.nextID++
	id := b.nextID
	ch := make(chan response, 1)
	b.pending[id] = ch
	b.mu.Unlock()

	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b.writeMu.Lock()
	err := b.conn.WriteJSON(msg)
	b.writeMu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: connection lost; stderr:\n%s", method, b.stderr)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-time.After(callTimeout):
		return fmt.Errorf("%s: no answer", method)
	}
}

func (b *Browser) mustCall(session, method string, params, result any) {
	b.t.Helper()
	if err := b.call(session, method, params, result); err != nil {
		b.t.Fatal(err)
	}
}

// Navigate loads url and waits until the page is loaded and ready, which
// is the case when the JavaScript expression ready is true.
func (b *Browser) Navigate(url, ready string) {
	b.t.Helper()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	b.mustCall(b.session, "Page.navigate", map[string]any{"url": url}, &nav)
	if nav.ErrorText != "" {
		b.t.Fatalf("loading %s: %s", url, nav.ErrorText)
	}
	b.WaitFor(`document.readyState === "complete" && (` + ready + `)`)
}

// WaitFor evaluates the JavaScript expression cond until it is true.
func (b *Browser) WaitFor(cond string) {
	b.t.Helper()
	deadline := time.Now().Add(callTimeout)
	for {
		var ok bool
		err := b.Eval(cond, &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: last error %v", cond, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Eval evaluates a JavaScript expression in the page (awaiting it if it
// is a promise) and decodes its value, which must be JSON, into out.
func (b *Browser) Eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := b.call(b.session, "Runtime.evaluate", map[string]any{
		"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	switch {
	case err != nil:
		return err
	case r.Exception != nil:
		return fmt.Errorf("%s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	case out == nil:
		return nil
	case len(r.Result.Value) == 0:
		return fmt.Errorf("%s: no value", expr)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// MustEval is Eval that fails the test on an error.
func (b *Browser) MustEval(expr string, out any) {
	b.t.Helper()
	if err := b.Eval(expr, out); err != nil {
		b.t.Fatal(err)
	}
}

// Click moves the mouse to (x, y), in CSS pixels of the viewport, and
// clicks the left button there, as a user would.
func (b *Browser) Click(x, y float64) {
	b.t.Helper()
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		p := map[string]any{"type": typ, "x": x, "y": y}
		if typ != "mouseMoved" {
			p["button"], p["clickCount"] = "left", 1
		}
		b.mustCall(b.session, "Input.dispatchMouseEvent", p, nil)
	}
}

// Type types text into the focused element, one key at a time.
func (b *Browser) Type(text string) {
	b.t.Helper()
	for _, r := range text {
		b.mustCall(b.session, "Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "text": string(r)}, nil)
		b.mustCall(b.session, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp"}, nil)
	}
}

// Key presses and releases a named key such as "Escape".
func (b *Browser) Key(key string) {
	b.t.Helper()
	for _, typ := range []string{"rawKeyDown", "keyUp"} {
		b.mustCall(b.session, "Input.dispatchKeyEvent", map[string]any{"type": typ, "key": key, "code": key}, nil)
	}
}

// Screenshot returns a PNG of the viewport.
func (b *Browser) Screenshot() []byte {
	b.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	b.mustCall(b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}

// stop closes the browser, and kills what is left of its process group.
func (b *Browser) stop() {
	if b.conn != nil {
		_ = b.call("", "Browser.close", nil, nil)
		b.conn.Close()
	}
	done := make(chan struct{})
	go func() {
		_ = b.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	// The group's id is the browser's pid (Setpgid).
	if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		b.t.Logf("killing chromium's process group: %v", err)
	}
	<-done
}

// tail keeps the last lines of Chromium's stderr for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lines = append(t.lines, s); len(t.lines) > 40 {
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
