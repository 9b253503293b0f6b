// Package scrollback is scrollback.read's paging: the room for "change
// how a Session's history and live grid are paged backwards".
//
// A page is the lines rows (Lines: 100 by default, at most MaxLines)
// before an opaque cursor (Cursor, ParseCursor); the newest page ends
// with the live grid's rows and older pages read the stored history
// (History, a Session's store.RowLog). A page that ends inside the live
// grid carries how many live rows are still unread, which the next page
// returns first unless the grid scrolled meanwhile.
//
// The package never sees a Session or a screen: the daemon (reads.go)
// gives it the rows log and a function for the live grid. Its tests run
// a fake history, no daemon.
package scrollback
