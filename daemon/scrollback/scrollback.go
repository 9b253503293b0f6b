package scrollback

import (
	"strconv"
	"strings"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// Page size bounds.
const (
	DefaultLines = 100
	MaxLines     = 10000
)

// "before" cursors are opaque: a prefix and the row id, base 36. A page
// that ends inside the live grid also carries, after a '.', how many
// live rows (from the top of the grid) are still unread; the next page
// returns them before the history, as long as no row has been committed
// to the history since (then the grid has scrolled and the page resumes
// at the history below the cursor).
const prefix = "scr_"

// Cursor is the "before" cursor of a page whose oldest line is row id,
// with liveLeft live rows still unread.
func Cursor(id uint64, liveLeft int) string {
	c := prefix + strconv.FormatUint(id, 36)
	if liveLeft > 0 {
		c += "." + strconv.FormatUint(uint64(liveLeft), 36)
	}
	return c
}

// ParseCursor reads a Cursor; anything else is an INVALID_ARGUMENT on
// before.
func ParseCursor(c string) (id uint64, liveLeft int, err error) {
	rest, ok := strings.CutPrefix(c, prefix)
	if !ok {
		return 0, 0, rpc.InvalidField("before", "not a scrollback cursor")
	}
	idPart, livePart, hasLive := strings.Cut(rest, ".")
	id, err = strconv.ParseUint(idPart, 36, 64)
	if err != nil {
		return 0, 0, rpc.InvalidField("before", "not a scrollback cursor")
	}
	if hasLive {
		k, err := strconv.ParseUint(livePart, 36, 16)
		if err != nil || k == 0 {
			return 0, 0, rpc.InvalidField("before", "not a scrollback cursor")
		}
		liveLeft = int(k)
	}
	return id, liveLeft, nil
}

// Lines is the page size of a scrollback.read: DefaultLines when lines
// is absent (0), otherwise lines clamped to 1..MaxLines.
func Lines(lines int) int {
	if lines == 0 {
		return DefaultLines
	}
	return max(1, min(lines, MaxLines))
}

// History is the stored rows a page reads (a Session's store.RowLog).
type History interface {
	Committed() uint64
	First() uint64
	ReadBefore(beforeID uint64, limit int) ([]store.Row, error)
}

// Read makes the page of lines rows before the cursor before ("": the
// newest page): the newest page ends with the live rows, which live
// gives (trailing blank rows dropped); older pages are history. out's
// Lines, Truncated and Before are set; a bad cursor changes nothing.
func Read(h History, before string, lines int, live func() []string, out *rpc.ScrollbackPage) error {
	n := Lines(lines)
	from, liveLeft := h.Committed()+1, -1 // -1: the whole live grid
	if before != "" {
		var err error
		if from, liveLeft, err = ParseCursor(before); err != nil {
			return err
		}
		if from != h.Committed()+1 {
			liveLeft = 0 // the grid has scrolled since: history only
		}
	}
	var rows []string
	if liveLeft != 0 {
		rows = live()
		if liveLeft > 0 {
			rows = rows[:min(liveLeft, len(rows))]
		}
	}
	out.Lines = []string{}
	if len(rows) > n {
		out.Lines = append(out.Lines, rows[len(rows)-n:]...)
		out.Truncated = true
		out.Before = Cursor(from, len(rows)-n)
		return nil
	}
	oldest := from
	if want := n - len(rows); want > 0 {
		hist, err := h.ReadBefore(from, want)
		if err != nil {
			return err
		}
		for _, r := range hist {
			out.Lines = append(out.Lines, r.Text)
		}
		if len(hist) > 0 {
			oldest = hist[0].ID
		}
	}
	out.Lines = append(out.Lines, rows...)
	if oldest > h.First() && h.First() <= h.Committed() {
		out.Truncated = true
		out.Before = Cursor(oldest, 0)
	}
	return nil
}

// TrimBlank is rows without its trailing blank rows.
func TrimBlank(rows []string) []string {
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}
