package reports

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNodeNavigation(t *testing.T) {
	c := &Node{Name: "I:a.c()V", Calls: 2}
	b := &Node{Name: "I:a.b()V", Calls: 1, Children: []*Node{c}}
	root := &Node{Name: "0000b718_main", Children: []*Node{b}}
	p := &Profile{Threads: []*Node{{Name: "00000001_Reference Handler"}, root}}

	assert.Same(t, root, p.Thread("main"))
	assert.Nil(t, p.Thread("mai"))
	assert.Equal(t, "Reference Handler", ThreadName(p.Threads[0].Name))
	assert.Same(t, c, root.Path("I:a.b()V", "I:a.c()V"))
	assert.Same(t, root, root.Path())
	assert.Nil(t, root.Path("I:a.c()V"))
	assert.Nil(t, p.Thread("nobody").Path("x"), "nil-safe")

	var seen []string
	var depths []int
	root.Walk(func(n *Node, d int) {
		seen = append(seen, n.Name)
		depths = append(depths, d)
	})
	assert.Equal(t, []string{"0000b718_main", "I:a.b()V", "I:a.c()V"}, seen)
	assert.Equal(t, []int{0, 1, 2}, depths)
}
