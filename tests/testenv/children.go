package testenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Children end with the test process, however it ends (its own -timeout,
// SIGTERM, SIGINT, SIGKILL): StartCmd starts each in a process group of its
// own with a parent-death signal (SIGKILL), and a reaper outside the test
// process kills every such group still registered when the test process's
// end closes the reaper's pipe, which ends the children's own children too.
//
// The parent-death signal fires when the thread that started the child
// ends, not the process: the children are started from one goroutine
// locked to its thread that never returns, so that the thread lives as long
// as the process.

var spawner struct {
	once sync.Once
	reqs chan func()
}

// onSpawnerThread runs f on the spawner's locked thread and waits for it.
func onSpawnerThread(f func()) {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives with the process
			for f := range spawner.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawner.reqs <- func() { f(); close(done) }
	<-done
}

// reaperScript reads "+PGID" and "-PGID" lines (a group started, a group
// ended); at the end of its input (the test process ended, however), it
// kills the groups still registered.
const reaperScript = `pgs=" "
while read -r l; do
	case $l in
	+*) pgs="$pgs${l#+} " ;;
	-*) g=${l#-}; case $pgs in *" $g "*) pgs="${pgs%% $g *} ${pgs#* $g }" ;; esac ;;
	esac
done
for g in $pgs; do kill -KILL -- "-$g" 2>/dev/null; done
`

var reaper struct {
	mu  sync.Mutex
	w   io.WriteCloser
	err error
}

// register tells the reaper about a process group (add) or that it ended.
func register(pgid int, add bool) error {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if reaper.w == nil && reaper.err == nil {
		reaper.w, reaper.err = startReaper()
	}
	if reaper.err != nil {
		return reaper.err
	}
	sign := "-"
	if add {
		sign = "+"
	}
	_, err := fmt.Fprintf(reaper.w, "%s%d\n", sign, pgid)
	return err
}

// startReaper starts the reaper in a session of its own (a signal to the
// test's process group, as timeout and Ctrl-C send, leaves it to do its
// work); its standard input is a pipe only this process holds.
func startReaper() (io.WriteCloser, error) {
	cmd := exec.Command("sh", "-c", reaperScript)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: starting the reaper of the test's children: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return w, nil
}

// StartCmd starts cmd so that it ends with the test process, however that
// ends: in a process group of its own (unless cmd asks for a session of its
// own, which is one too), with SIGKILL as its parent-death signal, and
// known to the reaper. Call Ended once cmd.Wait has returned.
func StartCmd(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if !cmd.SysProcAttr.Setsid {
		cmd.SysProcAttr.Setpgid = true
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	var err error
	onSpawnerThread(func() { err = cmd.Start() })
	if err != nil {
		return err
	}
	if err := register(cmd.Process.Pid, true); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return err
	}
	return nil
}

// Ended tells the reaper that the group of a command StartCmd started has
// ended (after cmd.Wait), so that it never kills a later group that reuses
// the id.
func Ended(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = register(cmd.Process.Pid, false)
	}
}

// RunCmd runs cmd as StartCmd starts it and waits for it.
func RunCmd(cmd *exec.Cmd) error {
	if err := StartCmd(cmd); err != nil {
		return err
	}
	defer Ended(cmd)
	return cmd.Wait()
}

// DieWithParent makes this process end (SIGKILL) when its parent does: a
// test binary whose `go test` is killed then ends too, and its children
// with it. It reports an error if the parent has already gone.
func DieWithParent() error {
	ppid := os.Getppid()
	var e syscall.Errno
	// On the spawner's thread, which never ends: the kernel keeps the
	// signal per thread and sends it while any thread that set it lives.
	onSpawnerThread(func() {
		_, _, e = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	})
	if e != 0 {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", e)
	}
	if os.Getppid() != ppid || ppid == 1 {
		return fmt.Errorf("the parent of this test process (%d) has already ended", ppid)
	}
	return nil
}
