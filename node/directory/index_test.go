package directory

import (
	"math"
	"slices"
	"testing"
)

func TestTermSet(t *testing.T) {
	for _, ids := range [][]uint32{
		nil,
		{0},
		{5, 3, 0, 127, 128, 129},
		{math.MaxUint32, 1 << 21, 16383, 16384, 1},
	} {
		want := slices.Sorted(slices.Values(ids))
		set, _ := makeTermSet(slices.Clone(ids), nil)
		got := slices.Collect(set.all())
		if !slices.Equal(got, want) {
			t.Errorf("makeTermSet(%v).all() = %v, want %v", ids, got, want)
		}
	}
}
