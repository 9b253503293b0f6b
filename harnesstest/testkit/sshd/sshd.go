// Package sshd is the test kit's OpenSSH rig: a real sshd on 127.0.0.1 (a
// free port, a throwaway host key and user key, nothing of the system's
// ssh setup touched) that plays "the other machine" for the --host tests
// of every front-end. It imports nothing of dlgt, so the daemon's own
// tests can use it too. Only _test.go files may import it.
package sshd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Path is where Debian's openssh-server installs sshd.
const Path = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// Dir holds its keys, config, pid file and log.
	Dir string
	// Port is its port on 127.0.0.1.
	Port int
	// PID is sshd's pid (0 while stopped).
	PID int
	// Host is user@127.0.0.1:port, for --host.
	Host string
	// SSHCommand is the ssh command line that reaches it with the user
	// key (DLGT_SSH_COMMAND).
	SSHCommand string
}

// Start starts sshd in dir whose sessions get env (SetEnv), until the
// test ends (its cleanup runs after any the caller registers later, so
// a caller may stop what it started over ssh first). It skips the test
// when sshd, ssh or ssh-keygen is not installed.
func Start(t testing.TB, dir string, env map[string]string) *Server {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		t.Skip("sshd is not installed (Debian openssh-server)")
	}
	for _, tool := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "user.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var setenv []string
	for _, k := range keys {
		setenv = append(setenv, strconv.Quote(k+"="+env[k]))
	}
	s := &Server{Dir: dir, Port: FreePort(t)}
	config := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile %s\nSetEnv %s\n",
		s.Port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"), strings.Join(setenv, " "))
	os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600)
	os.MkdirAll("/run/sshd", 0o755)
	s.Restart(t)
	s.Host = fmt.Sprintf("%s@127.0.0.1:%d", u.Username, s.Port)
	s.SSHCommand = fmt.Sprintf("ssh -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR", filepath.Join(dir, "user"))
	t.Cleanup(s.Stop)
	return s
}

// Restart starts sshd again on the same port and keys (after Stop) and
// waits until it accepts connections.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	os.Remove(filepath.Join(s.Dir, "sshd.pid"))
	if out, err := exec.Command(Path, "-f", filepath.Join(s.Dir, "sshd_config"), "-E", filepath.Join(s.Dir, "sshd.log")).CombinedOutput(); err != nil {
		t.Fatalf("sshd: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(s.Dir, "sshd.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port)); err == nil {
					c.Close()
					s.PID = pid
					return
				}
			}
		}
	}
	log, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	t.Fatalf("sshd did not come up:\n%s", log)
}

// Stop kills sshd and the per-connection processes it forked.
func (s *Server) Stop() {
	if s.PID == 0 {
		return
	}
	for _, pid := range Descendants(s.PID) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	syscall.Kill(s.PID, syscall.SIGKILL)
	s.PID = 0
}

// Descendants lists the processes below pid (from /proc).
func Descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 1 {
				parent[p], _ = strconv.Atoi(f[1])
			}
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for c, pp := range parent {
			if pp == p {
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(pid)
	return out
}

// FreePort is a TCP port on 127.0.0.1 nobody listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
