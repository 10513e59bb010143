// Package browsertest runs a real headless Chromium for tests of the pages
// libjprof writes (jprof flame) and drives it over the DevTools protocol:
// load a page, evaluate JavaScript, click and type as a user would, and
// take a screenshot. A page test that only parsed the HTML could not tell
// whether the script runs, draws or answers a click.
//
// Chromium is Debian's package (make deps installs it). Without it a test
// is skipped with a message, except under CI, where it fails.
package browsertest
