module delegate

go 1.26.8

require github.com/dlgt-dev/dlgt v0.0.0

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/creack/pty v1.1.24 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

// Built against this checkout; a program of its own would require a
// released version instead.
replace github.com/dlgt-dev/dlgt => ../..
