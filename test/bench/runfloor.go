package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/worker"
)

// runFloors times the Temporal floor, the best of cfg.floorTries runs, each
// on pools of its own, into r.
func runFloors(ctx context.Context, s *stack, n int, opts worker.Options, cfg config, r *result, log *slog.Logger) error {
	var best *floorRun
	for try := range cfg.floorTries {
		run, err := temporalFloor(ctx, s.tc, n, opts, fmt.Sprintf("floor%d-", try+1), false)
		if err != nil {
			return fmt.Errorf("Temporal floor: %w", err)
		}
		log.Info("Temporal floor", "try", try+1, "seconds", round(run.Seconds, 2), "switchesDone", round(run.FullSeconds, 2),
			"wftScheduleToStartMs", run.WorkflowTaskScheduleToStartMs, "activityScheduleToStartMs", run.ActivityScheduleToStartMs, "cpu", formatCPU(run.CPU))
		r.TemporalFloorTriesSeconds = append(r.TemporalFloorTriesSeconds, round(run.Seconds, 2))
		if best == nil || run.Seconds < best.Seconds {
			best = run
		}
	}
	r.TemporalFloorSeconds, r.TemporalFloorFullSeconds = round(best.Seconds, 2), round(best.FullSeconds, 2)
	r.FloorCPUSeconds, r.FloorActivityScheduleToStart, r.FloorWFTaskScheduleToStart = best.CPU, best.ActivityScheduleToStartMs, best.WorkflowTaskScheduleToStartMs
	var err error
	if r.FloorHistory, err = measureShape(ctx, s.tc, best.Sample, best.Start, best.End, time.Time{}); err != nil {
		return fmt.Errorf("floor histories: %w", err)
	}
	r.FloorStateTransitionsPerSwitch = r.FloorHistory.StateTransitions
	r.Shapes = map[string]*shapeFloor{floorKey: newShapeFloor(best, r.FloorHistory, n)}
	if !cfg.eager {
		return nil
	}
	for try := range cfg.floorTries {
		run, err := temporalFloor(ctx, s.tc, n, opts, fmt.Sprintf("eager%d-", try+1), true)
		if err != nil {
			return fmt.Errorf("Temporal floor with eager start: %w", err)
		}
		log.Info("Temporal floor, eager start", "try", try+1, "seconds", round(run.Seconds, 2), "switchesDone", round(run.FullSeconds, 2),
			"wftScheduleToStartMs", run.WorkflowTaskScheduleToStartMs, "cpu", formatCPU(run.CPU))
		if r.TemporalFloorEagerSeconds == 0 || run.Seconds < r.TemporalFloorEagerSeconds {
			r.TemporalFloorEagerSeconds, r.TemporalFloorEagerTemporalCPUMsPerSwitch = round(run.Seconds, 2), round(1000*run.CPU["temporal"]/float64(n), 1)
		}
	}
	return nil
}

// floorKey keys the switch's floor in the results' "shapes". Runs recorded
// before the one-shape cleanup (decisions/0003) key it "lean", from when
// other shapes were timed beside it; nothing reads the results back, so
// their rows stay as written.
const floorKey = "switch"

// shapeFloor is the no-op floor of the product's workflow shape.
type shapeFloor struct {
	Seconds            float64 `json:"seconds"`
	TemporalCPUSeconds float64 `json:"temporal_cpu_seconds"`
	// TemporalCPUMsPerSwitch: the Temporal server's CPU per switch.
	TemporalCPUMsPerSwitch float64     `json:"temporal_cpu_ms_per_switch"`
	History                *shapeStats `json:"history"`
}

func newShapeFloor(run *floorRun, st *shapeStats, n int) *shapeFloor {
	return &shapeFloor{
		Seconds: round(run.Seconds, 2), TemporalCPUSeconds: run.CPU["temporal"],
		TemporalCPUMsPerSwitch: round(1000*run.CPU["temporal"]/float64(n), 1), History: st,
	}
}
