#!/usr/bin/env bash
# Moves every pinned image and tini to what their tags point at today.
#
#   deploy/bump-digests.sh           # rewrite the pins in place, print each change
#   deploy/bump-digests.sh --check   # change nothing; exit 1 if a pin is stale
#
# Images: every `name:tag@sha256:<digest>` in deploy/Dockerfile and
# deploy/local/compose.yaml gets the digest the registry now serves for
# name:tag (the multi-platform index, so one pin serves amd64 and arm64).
# It asks the registry's v2 API with curl, anonymously (Docker Hub, gcr.io,
# mcr.microsoft.com and any registry with the standard token challenge).
#
# tini: the Dockerfile's TINI_VERSION and the .deb's SHA-256 for amd64 and
# arm64 become what apt, inside the (newly pinned) INIT_IMAGE, offers now.
# That runs `docker run` of that image, so it needs a Docker engine.
#
# Review the diff (git diff deploy/), build, and commit. Exit codes: 0 done
# (or, with --check, nothing stale), 1 stale pins (--check), 2 a lookup
# failed (nothing is written then).
set -euo pipefail

cd "$(dirname "$0")/.."

files=(deploy/Dockerfile deploy/local/compose.yaml)
dockerfile=deploy/Dockerfile
accept='application/vnd.oci.image.index.v1+json,application/vnd.docker.distribution.manifest.list.v2+json,application/vnd.docker.distribution.manifest.v2+json,application/vnd.oci.image.manifest.v1+json'

check=false
case "${1:-}" in
--check) check=true ;;
"") ;;
*)
  echo "usage: $0 [--check]" >&2
  exit 2
  ;;
esac

die() {
  echo "bump-digests: $*" >&2
  exit 2
}

# registry_path NAME prints "HOST REPOSITORY" for an image name as docker
# reads it: no host part means Docker Hub, and one-part Hub names live
# under library/.
registry_path() {
  local name=$1 first rest
  first=${name%%/*}
  if [[ $name == */* && ($first == *.* || $first == *:* || $first == localhost) ]]; then
    rest=${name#*/}
    echo "$first $rest"
  elif [[ $name == */* ]]; then
    echo "registry-1.docker.io $name"
  else
    echo "registry-1.docker.io library/$name"
  fi
}

# header NAME < response prints the value of an HTTP response header.
header() {
  tr -d '\r' | awk -v want="$(tr '[:upper:]' '[:lower:]' <<<"$1")" '
    { i = index($0, ":"); if (i == 0) next
      k = tolower(substr($0, 1, i - 1)); v = substr($0, i + 1); sub(/^[ \t]+/, "", v)
      if (k == want) { print v; exit } }'
}

# status < response prints the HTTP status code of the last response.
status() {
  tr -d '\r' | awk '/^HTTP\// { code = $2 } END { print code }'
}

# challenge_param NAME CHALLENGE prints one parameter of a
# `Bearer realm="...",service="...",scope="..."` challenge.
challenge_param() {
  sed -n 's/.*[ ,]'"$1"'="\([^"]*\)".*/\1/p' <<<" ${2#Bearer}"
}

# digest_of NAME TAG prints the digest the registry serves for NAME:TAG.
digest_of() {
  local name=$1 tag=$2 host repo url resp code auth realm service scope token
  read -r host repo < <(registry_path "$name")
  url="https://$host/v2/$repo/manifests/$tag"
  resp=$(curl -sS -I -H "Accept: $accept" "$url") || die "$name:$tag: $host did not answer"
  code=$(status <<<"$resp")
  if [[ $code == 401 ]]; then
    auth=$(header www-authenticate <<<"$resp")
    [[ $auth == Bearer* ]] || die "$name:$tag: $host wants auth this script cannot do: ${auth:-no challenge}"
    realm=$(challenge_param realm "$auth")
    service=$(challenge_param service "$auth")
    scope=$(challenge_param scope "$auth")
    [[ -n $realm ]] || die "$name:$tag: no realm in the challenge: $auth"
    [[ -n $scope ]] || scope="repository:$repo:pull"
    token=$(curl -fsS "$realm?service=$service&scope=$scope" | sed -n 's/.*"\(access_\)\{0,1\}token" *: *"\([^"]*\)".*/\2/p' | head -n1) ||
      die "$name:$tag: no anonymous token from $realm"
    [[ -n $token ]] || die "$name:$tag: no token in $realm's answer"
    resp=$(curl -sS -I -H "Accept: $accept" -H "Authorization: Bearer $token" "$url") || die "$name:$tag: $host did not answer"
    code=$(status <<<"$resp")
  fi
  [[ $code == 200 ]] || die "$name:$tag: $host answered HTTP ${code:-?} for $url"
  local digest
  digest=$(header docker-content-digest <<<"$resp")
  [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "$name:$tag: no usable Docker-Content-Digest (${digest:-none})"
  echo "${digest#sha256:}"
}

# The working copies: every change goes here first; files are written only
# when every lookup succeeded.
declare -A content
for f in "${files[@]}"; do
  content[$f]=$(<"$f")
done
changes=0

# ---- images ------------------------------------------------------------------
refs=$(grep -ohE '[a-z0-9][a-z0-9._/:-]*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}' "${files[@]}" | sort -u)
[[ -n $refs ]] || die "no pinned image found in ${files[*]}"
for ref in $refs; do
  nametag=${ref%@sha256:*}
  old=${ref#*@sha256:}
  name=${nametag%:*}
  tag=${nametag##*:}
  new=$(digest_of "$name" "$tag")
  if [[ $new != "$old" ]]; then
    echo "$nametag: sha256:$old -> sha256:$new"
    changes=$((changes + 1))
    for f in "${files[@]}"; do
      content[$f]=${content[$f]//"$nametag@sha256:$old"/"$nametag@sha256:$new"}
    done
  fi
done

# ---- tini ----------------------------------------------------------------------
arg_default() { sed -n "s/^ARG $1=//p" <<<"${content[$dockerfile]}" | head -n1; }
init_image=$(arg_default INIT_IMAGE)
[[ -n $init_image ]] || die "no ARG INIT_IMAGE= in $dockerfile"
apt_show=$(docker run --rm "$init_image" sh -c '
  set -e
  native=$(dpkg --print-architecture)
  for a in amd64 arm64; do [ "$a" = "$native" ] || dpkg --add-architecture "$a"; done
  apt-get update -qq >/dev/null
  apt-cache show --no-all-versions tini:amd64 tini:arm64') || die "apt in $init_image could not show tini"
# One "ARCH VERSION SHA256" line per stanza.
tini=$(awk '
  /^Version: / { v = $2 } /^Architecture: / { a = $2 } /^SHA256: / { s = $2 }
  /^$/ { if (a != "") print a, v, s; a = v = s = "" }
  END { if (a != "") print a, v, s }' <<<"$apt_show")
amd64=$(awk '$1 == "amd64"' <<<"$tini")
arm64=$(awk '$1 == "arm64"' <<<"$tini")
[[ -n $amd64 && -n $arm64 ]] || die "apt in $init_image showed no tini for amd64 and arm64"
read -r _ version sum_amd64 <<<"$amd64"
read -r _ version_arm64 sum_arm64 <<<"$arm64"
[[ $version == "$version_arm64" ]] || die "tini differs between amd64 ($version) and arm64 ($version_arm64)"
[[ $sum_amd64 =~ ^[0-9a-f]{64}$ && $sum_arm64 =~ ^[0-9a-f]{64}$ ]] || die "tini: unusable SHA-256 in apt's answer"
for pair in "TINI_VERSION $version" "TINI_SHA256_AMD64 $sum_amd64" "TINI_SHA256_ARM64 $sum_arm64"; do
  read -r arg value <<<"$pair"
  old=$(arg_default "$arg")
  [[ -n $old ]] || die "no ARG $arg= in $dockerfile"
  if [[ $old != "$value" ]]; then
    echo "$arg: $old -> $value"
    changes=$((changes + 1))
    content[$dockerfile]=${content[$dockerfile]//"ARG $arg=$old"/"ARG $arg=$value"}
  fi
done

# ---- result ----------------------------------------------------------------------
if [[ $changes == 0 ]]; then
  echo "every pin is current"
  exit 0
fi
if $check; then
  echo "$changes pin(s) stale; run deploy/bump-digests.sh" >&2
  exit 1
fi
for f in "${files[@]}"; do
  printf '%s\n' "${content[$f]}" >"$f"
done
echo "$changes pin(s) moved; review with git diff deploy/, then build and commit"
