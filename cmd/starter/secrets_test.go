package main

import (
	"os"
	"testing"

	"ate.dev/orchestrator/internal/secrettest"
)

func TestMain(m *testing.M) {
	if secrettest.RunMainIfAsked(main) {
		return
	}
	os.Exit(m.Run())
}

func TestSecretsNeverPrinted(t *testing.T) { secrettest.CheckSecretsNeverPrinted(t) }
