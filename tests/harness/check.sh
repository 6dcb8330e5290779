# Counted checks for the tests/shell scripts (POSIX sh, sourced).
#
#   check DESCRIPTION COMMAND...  run COMMAND; print "ok   DESCRIPTION" when it succeeds,
#                                 else "FAIL DESCRIPTION", and count which
#   check_that DESCRIPTION RESULT RESULT is "ok", or what went wrong: "ok   DESCRIPTION", or
#                                 "FAIL DESCRIPTION: RESULT", counted the same way
#   check_done NAME               print "NAME: P passed, F failed"; 0 when none failed

passes=0
failures=0

check() {
	_check_what=$1
	shift
	if "$@"; then
		echo "ok   $_check_what"
		passes=$((passes + 1))
	else
		echo "FAIL $_check_what"
		failures=$((failures + 1))
	fi
}

check_that() {
	if [ "$2" = ok ]; then
		echo "ok   $1"
		passes=$((passes + 1))
	else
		echo "FAIL $1: $2"
		failures=$((failures + 1))
	fi
}

check_done() {
	echo "$1: $passes passed, $failures failed"
	[ "$failures" -eq 0 ]
}
