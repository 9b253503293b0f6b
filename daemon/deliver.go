package daemon

import (
	"context"
	"log/slog"

	"github.com/dlgt-dev/dlgt/daemon/delivery"
	"github.com/dlgt-dev/dlgt/harness"
)

// deliveryTarget is generation g of s as package delivery's target,
// writing through write.
func (s *session) deliveryTarget(g *generation, log *slog.Logger, write func([]byte) (int, error)) *delivery.Target {
	return &delivery.Target{
		Out: &g.out, Exited: g.exited, Write: write, Log: log,
		Grid: func() ([]string, int, int) {
			s.termMu.Lock()
			defer s.termMu.Unlock()
			row, col := s.screen.Cursor()
			return s.screen.Live(), row, col
		},
		Who: func() (string, bool) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.rec.ID, s.spare != nil
		},
		Exec: func() (<-chan struct{}, <-chan struct{}, bool) {
			s.mu.Lock()
			e := s.exec
			s.mu.Unlock()
			if e == nil {
				return nil, nil, false
			}
			return e.submitted, e.done, true
		},
	}
}

// deliver writes keys to generation g of s, holding each write for its
// awaited evidence (package delivery).
func (s *session) deliver(ctx context.Context, log *slog.Logger, g *generation, keys []harness.Keystroke) error {
	return s.deliveryTarget(g, log, g.proc.Write).Deliver(ctx, keys)
}
