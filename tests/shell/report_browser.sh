#!/bin/sh
# The herd report renders in a real browser: run a small herd with --report,
# open report.html in headless Chromium (driven over the DevTools pipe,
# tests/harness/cdp.sh) at 1024x768, and check that every SVG lane was laid out
# with a non-zero size and drew its bars, that the page does not scroll
# sideways, that no label overlaps a bar or another label, and that the page
# carries no debug text.  The pictures tell the truth: the none lane's first
# bar (the first volley) shows its rejected part in the share of its CSV row,
# and every lane has the same y ticks at the same heights (one scale).  At
# 1920x1080 the lanes fill the width.
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
. "$ROOT/tests/harness/cdp.sh"
. "$ROOT/tests/harness/check.sh"
trap 'cdp_stop 2>/dev/null || true; rm -rf "$TMP"' EXIT

"$BIN" herd --clients 30 --policies none,exponential,full --report "$TMP/r" >"$TMP/herd.out"

cdp_start "$TMP" || { echo "report_browser: no browser: FAIL"; exit 1; }
cdp_page "file://$TMP/r/report.html" 1024 768
i=0
while [ "$(cdp_eval "document.readyState")" != complete ] && [ "$i" -lt 100 ]; do
	i=$((i + 1))
	sleep 0.05
done


# Each lane as POLICY:WIDTHxHEIGHT:BARS, space-separated.
lanes=$(cdp_eval "Array.prototype.map.call(document.querySelectorAll('svg.lane'), function (s) { var r = s.getBoundingClientRect(); return s.getAttribute('data-policy') + ':' + Math.round(r.width) + 'x' + Math.round(r.height) + ':' + s.querySelectorAll('rect').length; }).join(' ')")
for p in none exponential full; do
	lane=$(printf '%s\n' $lanes | grep "^$p:" || true)
	w=$(echo "$lane" | sed -n 's/^[a-z]*:\([0-9]*\)x\([0-9]*\):\([0-9]*\)$/\1/p')
	h=$(echo "$lane" | sed -n 's/^[a-z]*:\([0-9]*\)x\([0-9]*\):\([0-9]*\)$/\2/p')
	b=$(echo "$lane" | sed -n 's/^[a-z]*:\([0-9]*\)x\([0-9]*\):\([0-9]*\)$/\3/p')
	if [ -n "$w" ] && [ "$w" -gt 0 ] && [ "$h" -gt 0 ] && [ "$b" -gt 0 ]; then
		check_that "lane $p rendered ${w}x${h} with $b bars" ok
	else
		check_that "lane $p" "'$lane' (lanes: $lanes)"
	fi
done

# The none lane's first 100 ms: its rejected part's share of the bar's height is the CSV's share.
row0=$(sed -n 2p "$TMP/r/none.csv")
att=$(echo "$row0" | cut -d, -f2)
rej=$(echo "$row0" | cut -d, -f4)
share=$(cdp_eval "(function () { var g = document.querySelector('svg.lane[data-policy=none] g[data-row=\'0\']'); if (!g) return 'no first bar'; var r = g.querySelector('rect[data-part=rejected]'), all = 0; if (!r) return 'no rejected part'; g.querySelectorAll('rect').forEach(function (e) { all += e.getBBox().height; }); return (r.getBBox().height / all).toFixed(3); })()")
want=$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.3f", r / a }')
if [ "$rej" -gt 0 ] && awk -v g="$share" -v w="$want" 'BEGIN { d = g - w; exit !(d < 0.005 && d > -0.005) }'; then
	check_that "none's first bar: $rej of $att rejected, drawn as $share of its height" ok
else
	check_that "none's first bar's rejected part" "page '$share', CSV $rej of $att ($want)"
fi
# One scale: every lane's y ticks, as label@y in the lane's units, are the same list.
scales=$(cdp_eval "Array.prototype.map.call(document.querySelectorAll('svg.lane'), function (s) { return Array.prototype.map.call(s.querySelectorAll('.ytick'), function (t) { return t.textContent + '@' + Math.round(t.getBBox().y); }).join(';'); }).join(' ')")
distinct=$(printf '%s\n' $scales | sort -u | wc -l)
nticks=$(printf '%s\n' $scales | head -1 | tr ';' '\n' | wc -l)
[ "$distinct" = 1 ] && [ "$nticks" -ge 2 ] && check_that "every lane has the same $nticks y ticks" ok \
	|| check_that "one scale for every lane" "$scales"

# The table made it into the page too, one row per policy.
rows=$(cdp_eval "document.querySelectorAll('#results tr').length - 1")
[ "$rows" = 3 ] && check_that "results table has 3 rows" ok || check_that "results table rows" "$rows, want 3"

w=$(cdp_eval "document.documentElement.scrollWidth")
[ "${w:-9999}" -le 1024 ] && check_that "scrollWidth $w <= 1024 at 1024x768" ok || check_that "scrollWidth at 1024x768" "$w"

# Every label against every bar and every other label of its lane, in the lane's own units.
overlaps=$(cdp_eval "(function () { var n = 0, out = []; function hit(a, b) { return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height; } document.querySelectorAll('svg.lane').forEach(function (s) { var t = Array.prototype.map.call(s.querySelectorAll('text'), function (e) { return e.getBBox(); }), r = Array.prototype.map.call(s.querySelectorAll('rect'), function (e) { return e.getBBox(); }); t.forEach(function (a, i) { r.forEach(function (b) { if (hit(a, b)) n++; }); t.forEach(function (b, j) { if (j > i && hit(a, b)) n++; }); }); }); return n; })()")
[ "$overlaps" = 0 ] && check_that "no label covers a bar or a label" ok || check_that "labels over bars or labels" "$overlaps"

debug=$(cdp_eval "String(document.body.innerText.indexOf(' bars ') >= 0 || !!document.querySelector('pre'))")
[ "$debug" = false ] && check_that "no debug text" ok || check_that "no debug text" "the page has some"

cdp_viewport 1920 1080
w=$(cdp_eval "String(document.documentElement.scrollWidth <= 1920)")
[ "$w" = true ] && check_that "no horizontal scroll at 1920x1080" ok || check_that "no horizontal scroll at 1920x1080" "$w"
fill=$(cdp_eval "Math.round(document.querySelector('.lanes').getBoundingClientRect().right - document.querySelector('.lanes').getBoundingClientRect().left)")
[ "${fill:-0}" -ge 1800 ] && check_that "the lanes fill 1920: ${fill} px wide" ok || check_that "the lanes fill 1920" "$fill px"

# The storm report: a lane per run, each drawing goodput, offered load, attempts and the
# queue (four shapes), two lanes high enough to read and short enough to fit at 1024x768.
"$BIN" storm --policies naive --control --duration 2s --trigger 50%@500ms+500ms --clients 300 \
	--report "$TMP/s" >"$TMP/storm.out"
cdp_viewport 1024 768
cdp_page "file://$TMP/s/report.html" 1024 768
i=0
while [ "$(cdp_eval "document.readyState")" != complete ] && [ "$i" -lt 100 ]; do
	i=$((i + 1))
	sleep 0.05
done
lanes=$(cdp_eval "Array.prototype.map.call(document.querySelectorAll('svg.lane'), function (s) { var r = s.getBoundingClientRect(); return s.getAttribute('data-policy') + '=' + Math.round(r.width) + 'x' + Math.round(r.height) + '=' + s.querySelectorAll('polyline,polygon').length; }).join(' ')")
for p in naive:no-trigger naive; do
	lane=$(printf '%s\n' $lanes | grep "^$p=" || true)
	w=$(echo "$lane" | sed -n 's/^[a-z:-]*=\([0-9]*\)x\([0-9]*\)=\([0-9]*\)$/\1/p')
	h=$(echo "$lane" | sed -n 's/^[a-z:-]*=\([0-9]*\)x\([0-9]*\)=\([0-9]*\)$/\2/p')
	n=$(echo "$lane" | sed -n 's/^[a-z:-]*=\([0-9]*\)x\([0-9]*\)=\([0-9]*\)$/\3/p')
	if [ -n "$w" ] && [ "$w" -gt 900 ] && [ "$h" -gt 150 ] && [ "$h" -lt 360 ] && [ "$n" -eq 4 ]; then
		check_that "storm lane $p rendered ${w}x${h} with $n shapes" ok
	else
		check_that "storm lane $p" "'$lane' (lanes: $lanes)"
	fi
done
rows=$(cdp_eval "document.querySelectorAll('#results tr').length - 1")
[ "$rows" = 2 ] && check_that "storm results table has 2 rows" ok || check_that "storm results table rows" "$rows, want 2"
w=$(cdp_eval "document.documentElement.scrollWidth")
[ "${w:-9999}" -le 1024 ] && check_that "storm scrollWidth $w <= 1024 at 1024x768" ok || check_that "storm scrollWidth" "$w"
overlaps=$(cdp_eval "(function () { var n = 0; function hit(a, b) { return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height; } document.querySelectorAll('svg.lane').forEach(function (s) { var t = Array.prototype.map.call(s.querySelectorAll('text'), function (e) { return e.getBBox(); }), r = Array.prototype.map.call(s.querySelectorAll('rect'), function (e) { return e.getBBox(); }); t.forEach(function (a, i) { r.forEach(function (b) { if (hit(a, b)) n++; }); t.forEach(function (b, j) { if (j > i && hit(a, b)) n++; }); }); }); return n; })()")
[ "$overlaps" = 0 ] && check_that "storm: no label covers a band or a label" ok || check_that "storm labels overlapping" "$overlaps"
debug=$(cdp_eval "String(!!document.querySelector('pre'))")
[ "$debug" = false ] && check_that "storm: no debug text" ok || check_that "storm: no debug text" "the page has some"
cdp_viewport 1920 1080
side=$(cdp_eval "(function () { var l = document.querySelectorAll('svg.lane'), a = l[0].getBoundingClientRect(), b = l[1].getBoundingClientRect(); return String(a.top === b.top && b.right > 1800 && a.bottom < 1080); })()")
[ "$side" = true ] && check_that "storm at 1920x1080: the two lanes side by side, filling the width" ok \
	|| check_that "storm at 1920x1080" "lanes not side by side or not filling"

check_done report_browser
