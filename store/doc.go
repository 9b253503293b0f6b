// Package store owns dlgt's persistent state: the single bbolt file under the
// state directory (sessions, results, receipts, events, stable rows) and the
// append-only raw PTY logs beside it. It is the only package that imports bbolt.
package store
