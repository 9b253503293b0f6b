//go:build race

package main

// raceBuild: the test runs under the race detector, and so does the dlgt
// binary it builds.
const raceBuild = true
