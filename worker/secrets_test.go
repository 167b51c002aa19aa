package main

import (
	"os"
	"testing"

	"ate.dev/orchestrator/internal/options/optionstest"
)

func TestMain(m *testing.M) {
	if optionstest.RunMainIfAsked(main) {
		return
	}
	os.Exit(m.Run())
}

func TestSecretsNeverPrinted(t *testing.T) { optionstest.CheckSecretsNeverPrinted(t) }
