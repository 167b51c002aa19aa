package servers

import (
	"os"
	"syscall"
)

func ownerUID(st os.FileInfo) uint32 { return st.Sys().(*syscall.Stat_t).Uid }
