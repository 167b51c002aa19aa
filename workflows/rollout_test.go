package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRolloutSignals: the starter's pause and resume carry the config's
// generation and act only on a change of spec.rollout.paused (so another
// spec edit does not resume a halted rollout, and a stale signal is
// ignored); an operator's (no generation) always acts.
func TestRolloutSignals(t *testing.T) {
	type sig struct {
		pause      bool
		generation int64
	}
	for _, tc := range []struct {
		name           string
		start          rolloutRun
		signals        []sig
		paused, halted bool
		specPaused     bool
		generation     int64
		lastActed      bool
	}{
		{"spec pauses", rolloutRun{generation: 1}, []sig{{true, 2}}, true, false, true, 2, true},
		{"spec resumes a halt when paused is toggled", rolloutRun{generation: 1, halted: true},
			[]sig{{true, 2}, {false, 3}}, false, false, false, 3, true},
		{"another spec edit does not resume a halt", rolloutRun{generation: 1, halted: true},
			[]sig{{false, 2}}, false, true, false, 2, false},
		{"a stale signal is ignored", rolloutRun{generation: 5, specPaused: true, paused: true},
			[]sig{{false, 4}}, true, false, true, 5, false},
		{"an operator's pause holds until the spec's next change", rolloutRun{generation: 2},
			[]sig{{true, 0}, {false, 3}}, true, false, false, 3, false},
		{"an operator's resume clears a halt", rolloutRun{generation: 2, halted: true},
			[]sig{{false, 0}}, false, false, false, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.start
			acted := false
			for _, s := range tc.signals {
				acted = r.apply(s.pause, s.generation)
			}
			require.Equal(t, tc.paused, r.paused, "paused")
			require.Equal(t, tc.halted, r.halted, "halted")
			require.Equal(t, tc.specPaused, r.specPaused, "specPaused")
			require.Equal(t, tc.generation, r.generation, "generation taken in")
			require.Equal(t, tc.lastActed, acted, "the last signal acted")
			// A status write is due when the generation or the hold changed.
			require.Equal(t, tc.generation != tc.start.generation || acted, r.dirty, "dirty")
		})
	}
}
