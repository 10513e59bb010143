package reports

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
)

// The page and its script, kept as files of their own so that they can be
// read and edited as HTML and JavaScript.
var (
	//go:embed flame.html
	flameHTML string
	//go:embed flame.js
	flameJS string
)

// FlameOptions says how WriteFlame's page opens; the viewer can change
// both in the page.
type FlameOptions struct {
	// Value is "calls" or a metric name (see SelectValue).
	Value string
	// MergeThreads opens the merged view instead of one tree per thread.
	MergeThreads bool
	// Title heads the page; empty gives one made of the pid and sequence.
	Title string
	// Names is the form of the method names (see [NameForm]); the java
	// and short forms merge a method's frames of different types, whose
	// colour and tooltip then say its types.
	Names NameForm
}

// flameData is the JSON the page's script reads. The tree is flat, in
// depth-first order, so that neither side recurses (a Java stack can be
// thousands of frames deep) and repeated names are stored once.
type flameData struct {
	Title string `json:"title"`
	// Values are the metrics in profile order, then calls.
	Values []flameValue `json:"values"`
	Value  int          `json:"value"` // the one shown first
	Merged bool         `json:"merged"`
	Notes  []string     `json:"notes"`
	Names  []string     `json:"names"`
	// Types holds, per name, the type letters of the nodes of that name
	// ("JI"; "" for a thread root), which colour its frames, and
	// TypeNames what the letters mean.
	Types     []string          `json:"types"`
	TypeNames map[string]string `json:"typeNames"`
	// Nodes holds, per node, len(Values)+2 numbers: the index of its name
	// in Names, 1 + the index of its parent node (0 for a thread root),
	// then its own value per Values. A parent comes before its children,
	// and children keep their order.
	Nodes []uint64 `json:"nodes"`
}

type flameValue struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
}

// WriteFlame writes p as one self-contained interactive HTML flame graph:
// no network is needed to view it. Frames are as wide as their subtree's
// value (total), the root on top; the page searches (highlighting the
// matches and saying which share of the total they hold), zooms into a
// clicked frame, switches between the metrics and calls and between one
// tree per thread and all threads merged, and shows a frame's name,
// calls, self and total values in a tooltip.
//
// The profile travels as JSON in a script element of type
// application/json: encoding/json escapes '<', '>' and '&', so no method
// or thread name can end the element, and the script puts names on the
// page only as text, never as markup.
func WriteFlame(w io.Writer, p *Profile, o FlameOptions) error {
	v, err := SelectValue(p, o.Value)
	if err != nil {
		return err
	}
	// A sampled tree's counts: the samples with a frame on top, which add
	// up into the frames' widths (see Profile.StackCounts).
	countName, onStack := p.CountName()
	p, types := rename(p, o.Names, true)
	k := len(p.Metrics)
	d := flameData{Title: o.Title, Merged: o.MergeThreads, Notes: p.Notes, Value: v, TypeNames: map[string]string{}}
	for t, name := range typeNames {
		d.TypeNames[string(t)] = name
	}
	if v < 0 {
		d.Value = k
	}
	if d.Title == "" {
		d.Title = fmt.Sprintf("libjprof pid %d, log-rt %d", p.PID, p.Seq)
	}
	for _, m := range p.Metrics {
		d.Values = append(d.Values, flameValue{Name: m.Name, Unit: m.Unit})
	}
	d.Values = append(d.Values, flameValue{Name: countName})
	nameIdx := map[string]uint64{}
	var count uint64
	type item struct {
		n      *Node
		parent uint64
	}
	var stack []item
	for i := len(p.Threads) - 1; i >= 0; i-- {
		stack = append(stack, item{p.Threads[i], 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ni, ok := nameIdx[it.n.Name]
		if !ok {
			ni = uint64(len(d.Names))
			nameIdx[it.n.Name] = ni
			d.Names = append(d.Names, it.n.Name)
			d.Types = append(d.Types, types[it.n.Name])
		}
		d.Nodes = append(d.Nodes, ni, it.parent)
		for i := range k {
			d.Nodes = append(d.Nodes, at0(it.n.Base, i))
		}
		d.Nodes = append(d.Nodes, OwnCalls(it.n, onStack))
		count++
		for i := len(it.n.Children) - 1; i >= 0; i-- {
			stack = append(stack, item{it.n.Children[i], count})
		}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	page := strings.NewReplacer(
		"{{TITLE}}", html.EscapeString(d.Title),
		"{{DATA}}", string(data),
		"{{SCRIPT}}", flameJS,
	).Replace(flameHTML)
	_, err = io.WriteString(w, page)
	return err
}
