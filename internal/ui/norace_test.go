//go:build !race

package ui_test

const raceBuild = false
