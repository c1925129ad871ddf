#!/usr/bin/env bash
# The program's own reference. Every command's --help (from its option
# table): usage on stdout, exit 0, its options listed; an unknown option
# refused with exit 2. Then `clnet layers`, the model-file reference: every
# kind the registry knows, one kind's options with their defaults, and a
# clear failure for a kind that does not exist. Needs no device.
# usage: cli_help_test.sh CLNET
set -u
clnet=$1
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }

# Each command with options its table must list.
declare -A options=(
  [devices]="--devices"
  [train]="--data --data-npy --epochs --steps --batch --lr --optimizer --momentum --wd --schedule --seed --devices --split --save --resume --no-eval"
  [eval]="--data --data-npy --batch --devices --weights"
  [predict]="--weights --output --batch --devices"
  [bench]="--devices --batch --steps --rounds"
  [tune]="--batch --devices"
  [warm]="--batch --devices"
  [layers]="")
for cmd in "${!options[@]}"; do
  out=$("$clnet" "$cmd" --help 2>/dev/null); rc=$?
  lacks=()
  for o in ${options[$cmd]}; do grep -qE -- "^  $o( |=|$)" <<<"$out" || lacks+=("$o"); done
  if [ $rc -eq 0 ] && grep -q "^usage: clnet $cmd" <<<"$out" && [ ${#lacks[@]} -eq 0 ]; then
    ok "clnet $cmd --help lists its options"
  else bad "clnet $cmd --help (exit $rc), lacks: ${lacks[*]}" "$out"; fi
  "$clnet" "$cmd" --no-such-option >/dev/null 2>&1; rc=$?
  if [ $rc -eq 2 ]; then ok "clnet $cmd refuses an unknown option (exit 2)"
  else bad "clnet $cmd --no-such-option exits $rc, not 2"; fi
done

# The registry's kinds, as the library names them when refusing an unknown one.
err=$("$clnet" layers no_such_kind 2>&1 >/dev/null); rc=$?
if [ $rc -eq 2 ] && grep -q "unknown layer kind 'no_such_kind' (known: conv1d, " <<<"$err"; then
  ok "an unknown kind fails (exit 2) and lists the kinds"
else bad "unknown kind (exit $rc)" "$err"; fi
known=$(sed -n 's/.*(known: \([^)]*\)).*/\1/p' <<<"$err" | tr -d ' ' | tr ',' '\n')

all=$("$clnet" layers); rc=$?
listed=$(grep -E '^[a-z]' <<<"$all")
if [ $rc -eq 0 ] && [ -n "$known" ] && [ "$listed" = "$known" ]; then
  ok "clnet layers lists every kind of the registry ($(wc -l <<<"$listed"))"
else bad "clnet layers kinds (exit $rc)" "listed:" "$listed" "registry:" "$known"; fi
for kind in $known; do
  # the kind's block: its name, what it computes, then its options
  block=$(awk -v k="$kind" '$0 == k {on = 1; next} on && /^$/ {exit} on' <<<"$all")
  first=$(head -1 <<<"$block")
  if ! grep -qE '^  [^ ]' <<<"$first" || grep -qE '^  option +default' <<<"$first"; then
    bad "$kind says what it computes before its options" "$block"
  fi
  if ! grep -A3 -E '^  option +default +takes$' <<<"$block" | grep -qE '^  input +the line before'; then
    bad "$kind's options (name= and input= first)" "$block"
  fi
done

conv=$("$clnet" layers conv2d); rc=$?
want=('^conv2d$' '^  filters +required +a whole number >= 1$' '^  size +required +N or HxW, each >= 1$'
      '^  stride +1 +N or HxW, each >= 1$' '^  pad +0 +N or HxW, each >= 0, or same$'
      '^  groups +1 ' '^  bias +on +on or off$' '^  init +kaiming +normal, xavier, ' '^  bias_init +zeros ')
missing=()
for w in "${want[@]}"; do grep -qE -- "$w" <<<"$conv" || missing+=("$w"); done
if [ $rc -eq 0 ] && [ ${#missing[@]} -eq 0 ] && ! grep -q output_pad <<<"$conv"; then
  ok "clnet layers conv2d shows its options and defaults"
else bad "clnet layers conv2d (exit $rc), lacks: ${missing[*]}" "$conv"; fi

if "$clnet" layers conv2d extra >/dev/null 2>&1; then bad "a second argument is refused"
else ok "a second argument is refused"; fi
exit $fail
