package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Where the guide is installed: each harness's user skills directory, in
// a folder named after the skill.
const (
	skillDirName  = "dlgt"
	skillFileName = "SKILL.md"
	skillFileMode = fs.FileMode(0o644)
	skillDirMode  = fs.FileMode(0o755)
)

// Install and check statuses, one per target.
const (
	skillWritten   = "written"   // install: the file now holds this binary's guide
	skillUnchanged = "unchanged" // install: it already did; nothing was written
	skillCurrent   = "current"   // check: the installed copy is this binary's guide
	skillStale     = "stale"     // check: a copy is installed but differs
	skillMissing   = "missing"   // check: no copy is installed
)

// skillTarget is one harness's installed copy of the guide.
type skillTarget struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Status  string `json:"status"`
	Detail  string `json:"detail,omitempty"`
}

// skillInstallLong is skill install's help: the registry's harnesses
// and where each loads user skills from.
func skillInstallLong(reg []harness.Descriptor) string {
	var b strings.Builder
	b.WriteString(`Write this binary's guide (what "dlgt skill" prints) to the user skills
directory of each harness named with --harness (repeatable or
comma-separated; without it, every harness):

`)
	for _, d := range reg {
		if d.SkillsDir != "" {
			fmt.Fprintf(&b, "  %-7s %s/%s/%s/%s\n", d.Name, d.Config.Describe(), d.SkillsDir, skillDirName, skillFileName)
		}
	}
	b.WriteString(`
HOME and the variables above are read from the environment (each
harness reads its skills from there). Each file is written
atomically (a temporary file in the same directory, renamed over the old
one) with mode 0644; missing directories are created with mode 0755; nothing
else is touched. A copy that already matches is left alone ("unchanged").
Prints {"ok":true,"targets":[{"harness","path","status"}]} with status
"written" or "unchanged"; -o text prints one line per target.

--check writes nothing: it reports per target "current" (matches this
binary's guide), "stale" (differs, e.g. installed by another version) or
"missing", with "ok":false and exit status 1 when any is stale or missing.
"dlgt doctor" reports the same as warnings.`)
	return b.String()
}

func newSkillInstallCommand(e *env) *cobra.Command {
	var check bool
	var hf *harnessFlags
	cmd := &cobra.Command{
		Use:   "install [--harness NAME]... [--check]",
		Short: "Install the guide as a skill for each harness, or check the installed copies",
		Long:  skillInstallLong(e.registry()),
		Example: `  dlgt skill install
  dlgt skill install --harness codex -o text
  dlgt skill install --check`,
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			ds, err := hf.selected(e)
			if err != nil {
				return printFailure(cmd, err)
			}
			for _, d := range ds {
				if d.SkillsDir == "" {
					return printFailure(cmd, usageError("--harness %s: %s loads no user skills", d.Name, d.DisplayName))
				}
			}
			if len(ds) == 0 {
				ds = e.registry()
			}
			// Every path is resolved before anything is written, so a
			// bad environment changes nothing.
			targets, err := e.skillTargets(ds)
			if err != nil {
				return printFailure(cmd, err)
			}
			ok := true
			for i := range targets {
				t := &targets[i]
				if check {
					checkSkill(t)
					ok = ok && t.Status == skillCurrent
					continue
				}
				if err := installSkill(t); err != nil {
					return printFailure(cmd, rpc.Errorf(rpc.CodeInvalidArgument, "installing the %s skill: %v%s",
						t.Harness, err, writtenSoFar(targets[:i])))
				}
			}
			if text {
				writeSkillText(cmd.OutOrStdout(), targets)
			} else {
				body, err := rpc.Marshal(struct {
					OK      bool          `json:"ok"`
					Targets []skillTarget `json:"targets"`
				}{ok, targets})
				if err != nil {
					return err
				}
				if err := writeJSONLine(cmd, body); err != nil {
					return err
				}
			}
			if !ok {
				return exitStatus{exitError}
			}
			return nil
		},
	}
	hf = e.addHarnessFlags(cmd, true, "install for this harness: "+harnessList(e.registry())+" (repeatable or comma-separated; default: every harness)")
	f := cmd.Flags()
	f.BoolVar(&check, "check", false, "write nothing; report whether each installed copy is current, stale or missing (exit 1 unless all are current)")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}

// skillTargets resolves where each harness of ds loads user skills from,
// using the command's environment; a harness that loads none is skipped.
func (e *env) skillTargets(ds []harness.Descriptor) ([]skillTarget, error) {
	var out []skillTarget
	for _, d := range ds {
		if d.SkillsDir == "" {
			continue
		}
		base, err := d.Config.Resolve(e.getenv)
		if err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%v: cannot find the %s skills directory", err, d.Name)
		}
		out = append(out, skillTarget{Harness: d.Name, Path: filepath.Join(base, d.SkillsDir, skillDirName, skillFileName)})
	}
	return out, nil
}

// checkSkill sets t.Status to current, stale or missing.
func checkSkill(t *skillTarget) {
	data, err := readSkillFile(t.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Status = skillMissing
	case err != nil:
		t.Status, t.Detail = skillStale, err.Error()
	case bytes.Equal(data, skillGuide):
		t.Status = skillCurrent
	default:
		t.Status = skillStale
	}
}

// readSkillFile reads an installed copy, refusing anything but a regular
// file (through symlinks) and anything much larger than a guide.
func readSkillFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, int64(len(skillGuide))+1))
}

// installSkill writes the guide to t.Path unless it already holds it with
// mode 0644, and sets t.Status.
func installSkill(t *skillTarget) error {
	path := t.Path
	// A symlinked SKILL.md (a dotfiles checkout) is written through, so
	// the link itself stays.
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%s is a symbolic link that does not resolve: %w", path, err)
		}
		path = real
	}
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file", path)
		}
		if data, err := readSkillFile(path); err == nil && bytes.Equal(data, skillGuide) && fi.Mode().Perm() == skillFileMode {
			t.Status = skillUnchanged
			return nil
		}
	}
	if err := mkdirMissing(filepath.Dir(path), skillDirMode); err != nil {
		return err
	}
	if err := writeFileAtomic(path, skillGuide, skillFileMode); err != nil {
		return err
	}
	t.Status = skillWritten
	return nil
}

// mkdirMissing creates dir and its missing parents with mode perm
// (whatever the umask), leaving every existing directory as it is.
func mkdirMissing(dir string, perm fs.FileMode) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirMissing(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil {
		return err
	}
	return os.Chmod(dir, perm)
}

// writeFileAtomic replaces path with data: a temporary file in the same
// directory, synced, given mode, then renamed over path. A failure leaves
// path as it was and removes the temporary file.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename durable; a directory that cannot be synced is not
	// an error worth failing the install for.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// writtenSoFar names the targets written before a failure, for its message.
func writtenSoFar(done []skillTarget) string {
	s := ""
	for _, t := range done {
		if t.Status == skillWritten {
			s += "; already written: " + t.Path
		}
	}
	return s
}

// writeSkillText prints one line per target for a person, and how to fix
// a copy that is not current.
func writeSkillText(w io.Writer, targets []skillTarget) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range targets {
		line := fmt.Sprintf("%s\t%s\t%s", t.Harness, t.Status, t.Path)
		if t.Detail != "" {
			line += "\t(" + t.Detail + ")"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, t := range targets {
		if t.Status == skillStale || t.Status == skillMissing {
			fmt.Fprintf(w, "fix: dlgt skill install --harness %s\n", t.Harness)
		}
	}
}

// skillDoctorChecks are doctor's warnings about the installed guides: a
// stale or missing copy is reported, never a failure.
func (e *env) skillDoctorChecks() []doctorCheck {
	// A missing copy for a harness that is not installed either is no
	// reason for a warning.
	installed := map[string]bool{}
	env := e.harnessBinEnv()
	var checks []doctorCheck
	for _, d := range e.registry() {
		if d.SkillsDir == "" {
			continue
		}
		h := d.Name
		if _, err := d.Harness.Binary(env); err == nil {
			installed[h] = true
		}
		c := doctorCheck{Name: "skill." + h, OK: true}
		targets, err := e.skillTargets([]harness.Descriptor{d})
		if err != nil {
			c.Warning = true
			c.Detail = rpc.AsError(err).Message
			c.Fix = "set HOME (or " + d.Config.Env + ") to an absolute path, then run `dlgt skill install --harness " + h + "`"
			checks = append(checks, c)
			continue
		}
		t := targets[0]
		checkSkill(&t)
		switch {
		case t.Status == skillCurrent:
			c.Detail = fmt.Sprintf("the dlgt skill at %s matches this binary's guide", t.Path)
		case t.Status == skillMissing && !installed[h]:
			c.Detail = fmt.Sprintf("no dlgt skill at %s (%s is not installed either; after installing it, run `dlgt skill install --harness %s`)", t.Path, h, h)
		case t.Status == skillMissing:
			c.Warning = true
			c.Detail = fmt.Sprintf("no dlgt skill at %s: agents in %s do not know how to delegate through dlgt", t.Path, h)
			c.Fix = "run `dlgt skill install --harness " + h + "`"
		default:
			c.Warning = true
			c.Detail = fmt.Sprintf("the dlgt skill at %s differs from this binary's guide (another version installed it?)", t.Path)
			if t.Detail != "" {
				c.Detail += ": " + t.Detail
			}
			c.Fix = "run `dlgt skill install --harness " + h + "`"
		}
		checks = append(checks, c)
	}
	return checks
}
