package main
import (
_ "github.com/creack/pty"
_ "github.com/hinshun/vt10x"
_ "go.etcd.io/bbolt"
_ "github.com/spf13/cobra"
_ "golang.org/x/sys/unix"
_ "github.com/BurntSushi/toml"
)
func main(){}
