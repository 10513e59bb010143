package main

import "time"

// drainer runs a function every interval on its own goroutine until
// stopped: the writers that move what the C side handed over (log-gen
// buffers, JIT records) to files, off the Java threads.
type drainer struct {
	stop chan struct{}
	done chan struct{}
}

func startDrainer(every time.Duration, drain func()) *drainer {
	d := &drainer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
				drain()
			}
		}
	}()
	return d
}

// Stop stops the goroutine and waits until a drain in progress is over.
func (d *drainer) Stop() {
	close(d.stop)
	<-d.done
}
