#!/usr/bin/env bash
# Deploys firelock to a Google Cloud project, fresh or not (docs/operating.md,
# "From a fresh project to a running sale", explains every step):
#
#  1. setup (also alone: --setup): enables the APIs, checks the (default)
#     Firestore database (creates it with --firestore-location), creates the
#     runtime and build service accounts and grants their roles, adds Firebase
#     to the project, registers the web app (Hosting's init.json then carries
#     its appId) with its Hosting site, and turns on email/password sign-in;
#  2. firestore.rules and firestore.indexes.json (with the TTL policy on the
#     lease documents' expireAt);
#  3. the HTTP functions of the table below and the Pub/Sub-triggered
#     RunScheduledJob, each with GOOGLE_CLOUD_PROJECT, the runtime service
#     account, the capacity flags, and the secrets from Secret Manager pinned
#     to their newest enabled version;
#  4. the Cloud Scheduler jobs that publish to scheduled-jobs;
#  5. the web app (web/) on Firebase Hosting, built to call the functions
#     (built first of all, so a failed build changes nothing), with
#     firebase.json's rewrites to SaleState and TicketKeys.
#
# Every step looks before it changes anything, so running it again changes
# only what is missing; nothing waits at a prompt. --dry-run prints every
# command (queries as "? ...", changes as "+ ...") and makes no network call.
set -euo pipefail

# The HTTP functions, one line each: NAME NEEDS [FLAGS...], where NEEDS is
#   core      always deployed
#   payments  deployed with payments only (not with --no-payments)
# and FLAGS, if any, are gcloud flags for that function alone, placed after
# the shared ones (so they win), e.g. "JoinQueue core --max-instances=300".
# Every function is deployed alike otherwise (deploy_http below): public to
# IAM (each checks its caller itself), GOOGLE_CLOUD_PROJECT and the FIRELOCK_*
# settings, every secret, the runtime service account, the capacity flags.
# firebase.json's Hosting rewrites may route a path to one of them.
HTTP_FUNCTIONS=(
  "BookSeats       core"      # CONTRACT §3
  "CancelBooking   core"      # §3
  "HoldSeats       core"      # §3, §11
  "ExtendHold      core"      # §3
  "ConfirmHold     core"      # §3
  "ReleaseHold     core"      # §3
  "JoinQueue       core"      # §7
  "OperateSale     core"      # §8
  "CheckoutHold    payments"  # §10
  "StripeWebhook   payments"  # §10 (Stripe's signature, no ID token)
  "CheckIn         core"      # §13
  "TransferTicket  core"      # §13
  "TicketKeys      core"      # §13 (no token; Hosting serves /TicketKeys)
  "SaleState       core"      # §14 (no token; Hosting's CDN serves /SaleState)
)

# The secrets, one line each: ENV_VAR NEEDS, the variable the functions
# read (a secret of that name by default; the flags name others).
SECRETS=(
  "STRIPE_SECRET_KEY      payments"  # §10: the Stripe secret key (sk_live_...)
  "STRIPE_WEBHOOK_SECRET  payments"  # §10: the webhook endpoint's signing secret (whsec_...)
  "FIRELOCK_TICKET_KEY    core"      # §13: the tickets' Ed25519 signing key
)

# The APIs a deploy uses (gcloud services enable).
APIS=(
  cloudfunctions.googleapis.com      # the functions
  run.googleapis.com                 # ... which run on Cloud Run
  cloudbuild.googleapis.com          # ... built by Cloud Build
  artifactregistry.googleapis.com    # ... into Artifact Registry
  eventarc.googleapis.com            # RunScheduledJob's trigger
  pubsub.googleapis.com              # the scheduled-jobs topic
  cloudscheduler.googleapis.com      # the jobs that publish to it
  firestore.googleapis.com           # the database
  secretmanager.googleapis.com       # Stripe's secrets, the ticket key
  monitoring.googleapis.com          # the metrics (FIRELOCK_METRICS=cloud)
  cloudtrace.googleapis.com          # the traces (FIRELOCK_TRACES=cloud)
  identitytoolkit.googleapis.com     # Firebase Auth: ID tokens, revocation lookups
  firebase.googleapis.com            # Firebase on the project, the web app
  firebasehosting.googleapis.com     # the web app's hosting, the CDN of SaleState
  firebaserules.googleapis.com       # firestore.rules
  firebaseappcheck.googleapis.com    # App Check (CONTRACT §12)
  recaptchaenterprise.googleapis.com # ... the web app's attestation provider
  iam.googleapis.com                 # the service accounts
  cloudresourcemanager.googleapis.com # the project's IAM policy
)

RUNTIME_SA_NAME=firelock-runtime
BUILD_SA_NAME=firelock-build
WEB_APP_NAME=firelock-web

usage() {
  cat <<'USAGE'
usage: ./deploy.sh --project PROJECT --region REGION [options]

  --project ID          Google Cloud / Firebase project (or FIRELOCK_PROJECT, GOOGLE_CLOUD_PROJECT)
  --region REGION       region of the functions and scheduler jobs, e.g. europe-west1 (or FIRELOCK_REGION)
  --setup               set the project up and stop: the APIs, the Firestore database, the service
                        accounts and their roles, Firebase, the web app (every deploy does it first)
  --firestore-location LOC  create the (default) Firestore database there when it is missing,
                        e.g. eur3 or europe-west1: permanent, so never guessed (or FIRELOCK_FIRESTORE_LOCATION)
  --runtime ID          Cloud Functions runtime (default go126; a deploy checks `gcloud functions runtimes list`)
  --concurrency N       requests one instance of an HTTP function serves at once (default 80;
                        above 1 needs --cpu 1 or more; the local run's -max-in-flight plays this role)
  --cpu N               vCPUs per instance of an HTTP function (default 1)
  --memory SIZE         memory per instance of an HTTP function (default 512Mi)
  --max-instances N     instances each HTTP function may scale to (default 100): with --concurrency,
                        the most requests in flight per function (docs/operating.md, Capacity)
  --schedule CRON       when rollupCounters runs (default "0 * * * *": hourly)
  --sweep-schedule CRON when sweepExpired runs (default "* * * * *": every minute; each run
                        ends lapsed holds, expires the Checkout Sessions of paying holds that
                        ended (every 15 s until the next tick: CONTRACT §10 wants it within
                        a minute), makes refunds a request could not, and sweeps ended leases)
  --admit-schedule CRON when admitQueue runs; each run admits until the next tick
                        (default "* * * * *": every minute; at most 5 minutes between
                        ticks in every hour, or sales would go unadmitted between runs)
  --time-zone TZ        time zone of the schedules (default Etc/UTC)
  --allowed-origins LIST  browser origins allowed to call the HTTP functions (CORS),
                        comma-separated, e.g. https://tickets.example.com (or FIRELOCK_ALLOWED_ORIGINS;
                        default none: browsers are refused, servers and apps still call)
  --stripe-key-secret NAME      Secret Manager secret holding the Stripe secret key
                        (default STRIPE_SECRET_KEY; the functions read it as STRIPE_SECRET_KEY)
  --stripe-webhook-secret NAME  Secret Manager secret holding the webhook endpoint's signing
                        secret (default STRIPE_WEBHOOK_SECRET)
  --ticket-key-secret NAME      Secret Manager secret holding the tickets' keys: a JWK Set whose
                        first Ed25519 key signs (docs/door.md makes one and rotates it; default
                        FIRELOCK_TICKET_KEY; the functions read it as FIRELOCK_TICKET_KEY)
  --no-payments         deploy without Stripe: no CheckoutHold or StripeWebhook, no Stripe secrets
                        (a priced screening then cannot be paid for: docs/payments.md)
  --app-check MODE      App Check on JoinQueue, HoldSeats, BookSeats and CheckoutHold (CONTRACT §12):
                        monitor (default: a call without a valid token goes on, and is
                        logged and counted in firelock.appcheck.verifications), enforce
                        (refused: 401 app_check_failed) or off. Deploy with monitor first and
                        switch to enforce once the counts show your apps send valid tokens
                        (docs/operating.md), as Firebase advises (or FIRELOCK_APPCHECK)
  --app-check-apps LIST the app IDs whose tokens count (comma-separated; default any app
                        of the project; or FIRELOCK_APPCHECK_APPS)
                        The web app sends tokens only when built with VITE_RECAPTCHA_SITE_KEY
                        in the environment (a reCAPTCHA Enterprise site key registered with
                        App Check for the web app): VITE_RECAPTCHA_SITE_KEY=... ./deploy.sh ...
  --no-hosting          leave the web app (Firebase Hosting) alone: no build, no Hosting deploy;
                        the origins of a site the project has stay allowed
  --no-metrics          the functions export no metrics to Cloud Monitoring
                        (FIRELOCK_METRICS=off; default cloud: see docs/metrics.md)
  --no-traces           the functions export no traces to Cloud Trace
                        (FIRELOCK_TRACES=off; default cloud)
  --dry-run             print every command, run none, and make no network call: queries
                        as "? ...", changes as "+ ...", for a project where nothing exists yet
  -h, --help            this text

Needs gcloud, logged in as a project owner (or the roles docs/operating.md lists), on a
project with billing; the firebase CLI (on PATH, or tools/ after `make deps`) and Node.js;
npm to build the web app. Everything else it sets up itself. The functions run as
firelock-runtime@PROJECT.iam.gserviceaccount.com and are built as
firelock-build@PROJECT.iam.gserviceaccount.com, both created and granted their roles here.
The app is served at https://SITE.web.app and https://SITE.firebaseapp.com (SITE: the
project's Hosting site, normally the project ID); both origins are added to
--allowed-origins, and the app gets its Firebase config from Hosting
(/__/firebase/init.json) at run time.

Stripe: the webhook endpoint's URL is known before any deploy,
https://REGION-PROJECT.cloudfunctions.net/StripeWebhook. Register it at Stripe first, put
the signing secret Stripe shows in Secret Manager, then deploy (a deploy without the
secrets stops before changing anything, and says how).
USAGE
}

PROJECT="${FIRELOCK_PROJECT:-${GOOGLE_CLOUD_PROJECT:-}}"
REGION="${FIRELOCK_REGION:-}"
RUNTIME="${FIRELOCK_RUNTIME:-go126}"
SCHEDULE="${FIRELOCK_SCHEDULE:-0 * * * *}"
SWEEP_SCHEDULE="${FIRELOCK_SWEEP_SCHEDULE:-* * * * *}"
ADMIT_SCHEDULE="${FIRELOCK_ADMIT_SCHEDULE:-* * * * *}"
TIME_ZONE="${FIRELOCK_TIME_ZONE:-Etc/UTC}"
ALLOWED_ORIGINS="${FIRELOCK_ALLOWED_ORIGINS:-}"
APPCHECK="${FIRELOCK_APPCHECK:-monitor}"
APPCHECK_APPS="${FIRELOCK_APPCHECK_APPS:-}"
FIRESTORE_LOCATION="${FIRELOCK_FIRESTORE_LOCATION:-}"
# The capacity of each HTTP function (docs/operating.md, "Capacity"): 80
# requests at once per instance (Cloud Run's own default once an instance
# has a whole vCPU; a request mostly waits on Firestore), on 1 vCPU (more
# than one request at once needs a whole vCPU) and 512 MiB, up to 100
# instances: at most 8,000 requests of one function in flight.
CONCURRENCY="${FIRELOCK_CONCURRENCY:-80}"
CPU="${FIRELOCK_CPU:-1}"
MEMORY="${FIRELOCK_MEMORY:-512Mi}"
MAX_INSTANCES="${FIRELOCK_MAX_INSTANCES:-100}"
declare -A SECRET_NAME=(
  [STRIPE_SECRET_KEY]="${FIRELOCK_STRIPE_KEY_SECRET:-STRIPE_SECRET_KEY}"
  [STRIPE_WEBHOOK_SECRET]="${FIRELOCK_STRIPE_WEBHOOK_SECRET:-STRIPE_WEBHOOK_SECRET}"
  [FIRELOCK_TICKET_KEY]="${FIRELOCK_TICKET_KEY_SECRET:-FIRELOCK_TICKET_KEY}"
)
PAYMENTS=1
# The API version of the webhook's events: the one stripe-go v85 pins
# (deploy_test.go checks it against stripe.APIVersion).
STRIPE_API_VERSION=2026-03-25.dahlia
STRIPE_EVENTS="checkout.session.completed checkout.session.async_payment_succeeded checkout.session.expired checkout.session.async_payment_failed"
DRY_RUN=0
SETUP_ONLY=0
HOSTING=1
METRICS=cloud
TRACES=cloud

need_value() { if [ $# -lt 2 ] || [ -z "$2" ]; then echo "deploy.sh: $1 needs a value" >&2; usage >&2; exit 2; fi; }
while [ $# -gt 0 ]; do
  case "$1" in
    --project|--region|--runtime|--schedule|--sweep-schedule|--admit-schedule|--time-zone|--allowed-origins|--stripe-key-secret|--stripe-webhook-secret|--ticket-key-secret|--app-check|--app-check-apps|--firestore-location|--concurrency|--cpu|--memory|--max-instances)
      need_value "$@"
      set -- "$1=$2" "${@:3}"
      continue ;;
    --project=*) PROJECT=${1#*=} ;;
    --region=*) REGION=${1#*=} ;;
    --runtime=*) RUNTIME=${1#*=} ;;
    --schedule=*) SCHEDULE=${1#*=} ;;
    --sweep-schedule=*) SWEEP_SCHEDULE=${1#*=} ;;
    --admit-schedule=*) ADMIT_SCHEDULE=${1#*=} ;;
    --time-zone=*) TIME_ZONE=${1#*=} ;;
    --allowed-origins=*) ALLOWED_ORIGINS=${1#*=} ;;
    --stripe-key-secret=*) SECRET_NAME[STRIPE_SECRET_KEY]=${1#*=} ;;
    --stripe-webhook-secret=*) SECRET_NAME[STRIPE_WEBHOOK_SECRET]=${1#*=} ;;
    --ticket-key-secret=*) SECRET_NAME[FIRELOCK_TICKET_KEY]=${1#*=} ;;
    --app-check=*) APPCHECK=${1#*=} ;;
    --app-check-apps=*) APPCHECK_APPS=${1#*=} ;;
    --firestore-location=*) FIRESTORE_LOCATION=${1#*=} ;;
    --concurrency=*) CONCURRENCY=${1#*=} ;;
    --cpu=*) CPU=${1#*=} ;;
    --memory=*) MEMORY=${1#*=} ;;
    --max-instances=*) MAX_INSTANCES=${1#*=} ;;
    --setup) SETUP_ONLY=1 ;;
    --no-payments) PAYMENTS=0 ;;
    --dry-run) DRY_RUN=1 ;;
    --no-hosting) HOSTING=0 ;;
    --no-metrics) METRICS=off ;;
    --no-traces) TRACES=off ;;
    -h|--help) usage; exit 0 ;;
    *) echo "deploy.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

# Every setting is checked here, before anything runs: a refused deploy
# makes no call at all.
refuse() { echo "deploy.sh: $*" >&2; exit 2; }
missing=()
[ -n "$PROJECT" ] || missing+=("--project")
[ -n "$REGION" ] || missing+=("--region")
if [ ${#missing[@]} -gt 0 ]; then
  echo "deploy.sh: missing ${missing[*]}" >&2
  usage >&2
  exit 2
fi
[[ "$PROJECT" =~ ^[a-z][a-z0-9-]{4,28}[a-z0-9]$ ]] ||
  refuse "--project $PROJECT is not a project ID (6 to 30 lowercase letters, digits and hyphens, starting with a letter)"
[[ "$REGION" =~ ^[a-z]+-[a-z]+[0-9]+$ ]] ||
  refuse "--region $REGION is not a region name like europe-west1 or us-central1"
[ -z "$FIRESTORE_LOCATION" ] || [[ "$FIRESTORE_LOCATION" =~ ^[a-z]+[0-9]*(-[a-z]+[0-9]+)?$ ]] ||
  refuse "--firestore-location $FIRESTORE_LOCATION is not a Firestore location like eur3, nam5 or europe-west1"
case "$APPCHECK" in
  enforce|monitor|off) ;;
  *) refuse "--app-check $APPCHECK: want enforce, monitor or off" ;;
esac
if ! [[ "$CONCURRENCY" =~ ^[1-9][0-9]{0,3}$ ]] || [ "$CONCURRENCY" -gt 1000 ]; then
  refuse "--concurrency $CONCURRENCY: want a whole number from 1 to 1000"
fi
if ! [[ "$MAX_INSTANCES" =~ ^[1-9][0-9]{0,3}$ ]] || [ "$MAX_INSTANCES" -gt 1000 ]; then
  refuse "--max-instances $MAX_INSTANCES: want a whole number from 1 to 1000 (Cloud Run's limit without a quota increase)"
fi
# Cloud Run takes a fraction of a vCPU (from 0.08) or 1, 2, 4, 6 or 8.
if ! [[ "$CPU" =~ ^(0?\.[0-9]+|[12468])$ ]] || ! awk -v c="$CPU" 'BEGIN { exit !(c >= 0.08) }'; then
  refuse "--cpu $CPU: want a fraction of a vCPU from 0.08 (e.g. 0.5), or 1, 2, 4, 6 or 8"
fi
[[ "$MEMORY" =~ ^[1-9][0-9]{0,5}(Mi|Gi)$ ]] ||
  refuse "--memory $MEMORY: want a size in Mi or Gi, e.g. 512Mi or 1Gi"
if [ "$CONCURRENCY" -gt 1 ] && ! awk -v c="$CPU" 'BEGIN { exit !(c >= 1) }'; then
  refuse "--concurrency $CONCURRENCY needs --cpu 1 or more (Cloud Run serves one request at a time on less than a whole vCPU); lower --concurrency to 1 or raise --cpu"
fi
[[ "$RUNTIME" =~ ^[a-z]+[0-9]+$ ]] ||
  refuse "--runtime $RUNTIME is not a runtime ID like go126"
[[ "$TIME_ZONE" =~ ^[A-Za-z][A-Za-z0-9_+/-]*$ ]] ||
  refuse "--time-zone $TIME_ZONE is not a time zone name like Etc/UTC or Europe/Paris"
IFS=',' read -ra app_ids <<<"$APPCHECK_APPS"
for a in "${app_ids[@]}"; do
  [[ "${a// /}" =~ ^([0-9]+:[0-9]+:(web|ios|android):[A-Za-z0-9]+)?$ ]] ||
    refuse "--app-check-apps: \"$a\" is not a Firebase app ID like 1:1234567890:web:0123abcd"
done
for env in "${!SECRET_NAME[@]}"; do
  [[ "${SECRET_NAME[$env]}" =~ ^[A-Za-z0-9_-]{1,255}$ ]] ||
    refuse "the secret name \"${SECRET_NAME[$env]}\" (for $env) is not a Secret Manager secret ID (letters, digits, - and _)"
done
# An origin is scheme://host[:port], nothing more: a path or a * would never match.
IFS=',' read -ra origins <<<"$ALLOWED_ORIGINS"
for o in "${origins[@]}"; do
  o="${o// /}"
  if [ -n "$o" ] && ! [[ "$o" =~ ^https?://[A-Za-z0-9.-]+(:[0-9]+)?$ ]]; then
    refuse "allowed origin \"$o\" is not scheme://host[:port] (e.g. https://tickets.example.com)"
  fi
done

# The function reads the schedule from each message to find its tick: a
# schedule it cannot parse would make every message a dropped bad payload.
for s in "$SCHEDULE" "$SWEEP_SCHEDULE" "$ADMIT_SCHEDULE"; do
  if [ "$(wc -w <<<"$s")" -ne 5 ] || [[ "$s" == *'"'* ]]; then
    refuse "schedule \"$s\" is not a 5-field cron expression (minute hour day-of-month month day-of-week)"
  fi
done

# Each admitQueue run admits until its schedule's next tick (plus a 15 s
# handover) and must end within RunScheduledJob's 540 s timeout, which caps
# it (jobs.RunReserve keeps 45 s for the wind-down): a schedule with longer
# gaps would leave sales unadmitted between runs. Accepted: a minute field
# of *, */N, N-M/N or lists, every hour of every day (the other four fields
# *), at most 5 minutes between ticks. Ticks are instants of the zone's wall
# clock, so this holds through daylight saving's changes too.
admit_max_gap() { # prints the most minutes between two ticks of $1, or -1 for syntax it does not know
  local min h dom mon dow it step range lo hi m first=-1 prev=-1 gap=0
  local -a on=() items=()
  read -r min h dom mon dow <<<"$1"
  if [ "$h $dom $mon $dow" != "* * * *" ]; then echo 1440; return; fi
  IFS=',' read -ra items <<<"$min"
  for it in "${items[@]}"; do
    step=1 range=$it
    if [[ $it == */* ]]; then step=${it#*/} range=${it%/*}; fi
    if [ "$range" = "*" ]; then lo=0 hi=59
    elif [[ $range =~ ^([0-9]{1,2})-([0-9]{1,2})$ ]]; then lo=$((10#${BASH_REMATCH[1]})) hi=$((10#${BASH_REMATCH[2]}))
    elif [[ $range =~ ^[0-9]{1,2}$ ]]; then lo=$((10#$range)) hi=$lo; if [[ $it == */* ]]; then hi=59; fi
    else echo -1; return; fi
    if ! [[ $step =~ ^[0-9]{1,2}$ ]] || [ $((10#$step)) -lt 1 ] || [ "$hi" -gt 59 ] || [ "$lo" -gt "$hi" ]; then echo -1; return; fi
    for ((m = lo; m <= hi; m += 10#$step)); do on[m]=1; done
  done
  for ((m = 0; m < 60; m++)); do
    [ -n "${on[m]:-}" ] || continue
    if [ "$first" -lt 0 ]; then first=$m; fi
    if [ "$prev" -ge 0 ] && [ $((m - prev)) -gt "$gap" ]; then gap=$((m - prev)); fi
    prev=$m
  done
  if [ $((first + 60 - prev)) -gt "$gap" ]; then gap=$((first + 60 - prev)); fi
  echo "$gap"
}
gap=$(admit_max_gap "$ADMIT_SCHEDULE")
if [ "$gap" -lt 0 ] || [ "$gap" -gt 5 ]; then
  if [ "$gap" -lt 0 ]; then why="is not a minute field this check knows"; else why="leaves up to $gap minutes between runs"; fi
  echo "deploy.sh: admit schedule \"$ADMIT_SCHEDULE\" $why; each admitQueue run admits until the next tick" >&2
  echo "           and must end within RunScheduledJob's 540 s timeout, so sales would go unadmitted between runs." >&2
  echo "           Use a schedule that ticks at least every 5 minutes of every hour, e.g. \"* * * * *\" (the default) or \"*/5 * * * *\"." >&2
  exit 2
fi

cd "$(dirname "$0")"

# The functions and secrets this deploy takes, from the tables.
wanted() { [ "$1" = core ] || { [ "$1" = payments ] && [ "$PAYMENTS" = 1 ]; }; }
functions_deployed=()
declare -A function_flags=()
for line in "${HTTP_FUNCTIONS[@]}"; do
  read -r name needs flags <<<"$line"
  case "$needs" in core|payments) ;; *) echo "deploy.sh: HTTP_FUNCTIONS: $name needs \"$needs\": want core or payments" >&2; exit 2 ;; esac
  if wanted "$needs"; then
    functions_deployed+=("$name")
    function_flags[$name]=$flags
  fi
done
functions_list=$(IFS=,; echo "${functions_deployed[*]}")
secrets_used=()
for line in "${SECRETS[@]}"; do
  read -r env needs <<<"$line"
  if wanted "$needs"; then secrets_used+=("$env"); fi
done
# firebase.json's rewrites must name functions this deploy deploys.
if [ "$HOSTING" = 1 ] && [ "$SETUP_ONLY" = 0 ] && command -v node >/dev/null; then
  if ! check=$(node scripts/hosting-config.mjs --site="$PROJECT" --region="$REGION" --functions="$functions_list" --check 2>&1); then
    echo "deploy.sh: ${check#hosting-config: }" >&2
    exit 1
  fi
fi

# The tools. A dry run needs none of them: it runs nothing.
if command -v firebase >/dev/null; then
  FIREBASE=firebase
elif [ -x tools/node_modules/.bin/firebase ]; then
  FIREBASE=tools/node_modules/.bin/firebase
else
  FIREBASE=firebase
  [ "$DRY_RUN" = 1 ] || { echo "deploy.sh: the firebase CLI is needed: run 'make deps' or 'npm install -g firebase-tools'" >&2; exit 1; }
fi
if [ "$DRY_RUN" = 0 ]; then
  command -v gcloud >/dev/null || { echo "deploy.sh: gcloud not found: install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install)" >&2; exit 1; }
  command -v node >/dev/null || { echo "deploy.sh: Node.js is needed (the firebase CLI runs on it, and this script reads its JSON with it)" >&2; exit 1; }
  if [ "$HOSTING" = 1 ] && [ "$SETUP_ONLY" = 0 ]; then
    command -v npm >/dev/null || { echo "deploy.sh: npm is needed to build the web app (or pass --no-hosting)" >&2; exit 1; }
  fi
  account=$(gcloud auth list --filter=status:ACTIVE --format='value(account)' 2>/dev/null || true)
  [ -n "$account" ] || { echo "deploy.sh: gcloud has no active account: run 'gcloud auth login' (and 'firebase login', or 'gcloud auth application-default login')" >&2; exit 1; }
  # No gcloud command may stop at a prompt halfway: each answers its default
  # or fails (the changes below also say --quiet).
  export CLOUDSDK_CORE_DISABLE_PROMPTS=1
  # A command that fails stops the deploy; every step looks before it
  # changes anything, so the same deploy, run again, goes on from there.
  set -E
  stopped() { echo "deploy.sh: stopped: the command above failed (exit $1). Fix its cause and run the same deploy again: each step looks before it changes anything, so it goes on from here." >&2; }
  trap 'stopped $?' ERR
fi

# Queries and changes. A query runs in a deploy and is printed ("? ...") in a
# dry run, where it finds nothing (status 1): a dry run shows what a deploy
# to a project where nothing exists yet would run, and makes no network
# call. A change is printed ("+ ...") and run, or only printed.
exec 3>&1
ask() {
  if [ "$DRY_RUN" = 1 ]; then
    { printf '?'; printf ' %q' "$@"; printf '\n'; } >&3
    return 1
  fi
  "$@"
}
run() {
  if [ "$DRY_RUN" = 1 ]; then
    { printf '+'; printf ' %q' "$@"; printf '\n'; } >&3
  else
    echo "+ $*" >&2
    "$@"
  fi
}
say() { echo "deploy.sh: $*" >&2; }
# json EXPR: EXPR (JavaScript, over the JSON on stdin as j) printed, one
# value a line; nothing for undefined or null.
json() {
  node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
    const j = JSON.parse(s || "null"); const v = (0, eval)("(j) => " + process.argv[1])(j);
    for (const x of [].concat(v ?? [])) console.log(x);
  })' "$1"
}

RUNTIME_SA="$RUNTIME_SA_NAME@$PROJECT.iam.gserviceaccount.com"
BUILD_SA="$BUILD_SA_NAME@$PROJECT.iam.gserviceaccount.com"
FUNCTIONS_URL="https://$REGION-$PROJECT.cloudfunctions.net"
WEBHOOK_URL="$FUNCTIONS_URL/StripeWebhook"
problems=()

# The web app, built from its lock file to call this deployment's functions,
# before anything changes: a build that fails stops the deploy here.
if [ "$HOSTING" = 1 ] && [ "$SETUP_ONLY" = 0 ]; then
  if [ "$APPCHECK" = enforce ] && [ -z "${VITE_RECAPTCHA_SITE_KEY:-}" ]; then
    say "warning: --app-check enforce, but VITE_RECAPTCHA_SITE_KEY is not set: the web app built now sends no App Check token, and its joins, holds, bookings and checkouts will be refused (401 app_check_failed)"
  fi
  run npm --prefix web ci --no-audit --no-fund
  run env "VITE_FUNCTIONS_URL=$FUNCTIONS_URL" npm --prefix web run build
fi

# ---------------------------------------------------------------- setup ---

# 1. The APIs, those not enabled yet, in one call.
enabled=$(ask gcloud services list --enabled --project="$PROJECT" --format='value(config.name)') || true
to_enable=()
for api in "${APIS[@]}"; do
  grep -qx -- "$api" <<<"$enabled" || to_enable+=("$api")
done
if [ ${#to_enable[@]} -gt 0 ]; then
  run gcloud services enable "${to_enable[@]}" --project="$PROJECT" --quiet
fi

# 2. What must be there before anything else changes: the database, the
#    runtime, the secrets (a deploy), and the Firebase CLI's access. Every
#    problem is listed, and nothing more is changed.
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
continent() { case "$1" in nam*) echo us ;; eur*) echo europe ;; northamerica-*) echo us ;; *) echo "${1%%-*}" ;; esac; }
DB_CREATE=0
if db=$(ask gcloud firestore databases describe --database='(default)' --project="$PROJECT" --format='value(type,locationId)' 2>"$errors"); then
  read -r db_type db_location <<<"$db"
  if [ "$db_type" != FIRESTORE_NATIVE ]; then
    problems+=("the (default) Firestore database is in $db_type; firelock needs Firestore in Native mode (a project's database mode cannot change: use another project)")
  fi
  if [ -n "$FIRESTORE_LOCATION" ] && [ "$FIRESTORE_LOCATION" != "$db_location" ]; then
    say "warning: --firestore-location $FIRESTORE_LOCATION, but the (default) database is in $db_location already (a database's location never changes)"
  fi
  if [ "$(continent "$db_location")" != "$(continent "$REGION")" ]; then
    say "warning: the (default) Firestore database is in $db_location, the functions in $REGION: every Firestore call crosses that distance"
  fi
  say "Firestore: the (default) database, $db_type in $db_location"
elif [ "$DRY_RUN" = 0 ] && ! grep -q 'NOT_FOUND' "$errors"; then
  problems+=("cannot read the (default) Firestore database: $(tr '\n' ' ' <"$errors")(just after its API was enabled, try again in a minute)")
elif [ -n "$FIRESTORE_LOCATION" ]; then
  DB_CREATE=1
elif [ "$DRY_RUN" = 1 ]; then
  say "dry run: a deploy stops here when the project has no (default) Firestore database: --firestore-location creates it"
else
  problems+=("the project has no (default) Firestore database: pass --firestore-location (e.g. eur3 or nam5 for multi-region, or a region like $REGION; permanent) and deploy.sh creates it")
fi

if [ "$SETUP_ONLY" = 0 ]; then
  if runtimes=$(ask gcloud functions runtimes list --project="$PROJECT" --region="$REGION" --format='value(name)'); then
    if ! grep -qx -- "$RUNTIME" <<<"$runtimes"; then
      problems+=("runtime $RUNTIME is not offered in $REGION; offered: $(tr '\n' ' ' <<<"$runtimes")")
    fi
  elif [ "$DRY_RUN" = 0 ]; then
    problems+=("cannot list the Cloud Functions runtimes of $REGION (is $REGION a Cloud Functions region? see gcloud's error above)")
  fi
fi

# Each secret is pinned to its newest enabled version, read now: a function
# keeps the version it was deployed with until the next deploy (docs/operating.md:
# rotating a secret).
declare -A secret_version=()
missing_secrets=()
for env in "${secrets_used[@]}"; do
  name=${SECRET_NAME[$env]}
  if v=$(ask gcloud secrets versions list "$name" --project="$PROJECT" --filter=state=ENABLED --sort-by=~createTime --limit=1 --format='value(name.basename())' 2>"$errors"); then
    if [ -n "$v" ]; then secret_version[$env]=$v; else missing_secrets+=("$env"); fi
  elif [ "$DRY_RUN" = 1 ]; then
    secret_version[$env]=1
  elif grep -q 'NOT_FOUND' "$errors"; then
    missing_secrets+=("$env")
  else
    problems+=("cannot read the versions of the secret $name: $(tr '\n' ' ' <"$errors")")
  fi
done
if [ "$DRY_RUN" = 1 ] && [ ${#secrets_used[@]} -gt 0 ]; then
  if [ "$SETUP_ONLY" = 1 ]; then
    say "dry run: the setup gives the runtime account access to each of these secrets that exists"
  else
    say "dry run: each secret shows as version 1; a deploy pins the newest enabled version it finds, and stops here, before any other change, when one is missing"
  fi
fi
if [ ${#missing_secrets[@]} -gt 0 ] && [ "$SETUP_ONLY" = 0 ]; then
  msg="these Secret Manager secrets have no enabled version in $PROJECT yet:"
  for env in "${missing_secrets[@]}"; do msg+=" ${SECRET_NAME[$env]}"; done
  msg+=". In this order:"
  step=1
  for env in "${missing_secrets[@]}"; do
    name=${SECRET_NAME[$env]}
    case "$env" in
      STRIPE_SECRET_KEY)
        msg+=$'\n'"  $step. the Stripe secret key (Dashboard > Developers > API keys):"
        msg+=$'\n'"       printf %s 'sk_live_...' | gcloud secrets create $name --data-file=- --project=$PROJECT" ;;
      STRIPE_WEBHOOK_SECRET)
        msg+=$'\n'"  $step. register the webhook endpoint at Stripe now; its URL is known before the deploy"
        msg+=$'\n'"     (Dashboard > Developers > Webhooks > Add endpoint, API version $STRIPE_API_VERSION):"
        msg+=$'\n'"       URL     $WEBHOOK_URL"
        msg+=$'\n'"       events  $STRIPE_EVENTS"
        msg+=$'\n'"     then store the signing secret it shows (whsec_...):"
        msg+=$'\n'"       printf %s 'whsec_...' | gcloud secrets create $name --data-file=- --project=$PROJECT"
        msg+=$'\n'"     (Stripe retries its deliveries for days, so events sent before the deploy are not lost)" ;;
      FIRELOCK_TICKET_KEY)
        msg+=$'\n'"  $step. the tickets' keys (CONTRACT §13): a JWK Set whose first Ed25519 key signs, made"
        msg+=$'\n'"     as docs/door.md (\"The keys\") shows into ticket-key.json, kept only in Secret Manager:"
        msg+=$'\n'"       gcloud secrets create $name --data-file=ticket-key.json --project=$PROJECT && rm ticket-key.json" ;;
    esac
    step=$((step + 1))
  done
  msg+=$'\n'"  $step. run this deploy again"
  if [ "$PAYMENTS" = 1 ]; then msg+=" (or pass --no-payments to deploy without Stripe)"; fi
  problems+=("$msg")
fi

# The Firebase CLI answers for its own login (or Application Default
# Credentials), and says whether Firebase is on the project.
firebase_on=0
if fb_projects=$(ask "$FIREBASE" projects:list --json); then
  if [ -n "$(json "(j.result || []).filter(p => p.projectId === '$PROJECT').map(p => p.projectId)" <<<"$fb_projects")" ]; then
    firebase_on=1
  fi
elif [ "$DRY_RUN" = 0 ]; then
  problems+=("the firebase CLI cannot list your projects: run 'firebase login' (or 'gcloud auth application-default login'), then deploy again")
fi

if [ ${#problems[@]} -gt 0 ]; then
  say "nothing was deployed, and no setting was changed but the APIs enabled above:"
  for p in "${problems[@]}"; do echo "  - $p" >&2; done
  exit 1
fi

# 3. The database, when --firestore-location asks for it.
if [ "$DB_CREATE" = 1 ]; then
  run gcloud firestore databases create --database='(default)' --location="$FIRESTORE_LOCATION" --type=firestore-native --project="$PROJECT" --quiet
fi

# 4. The service accounts and their roles. The functions run as the runtime
#    account, with only what they use (docs/operating.md lists each role and
#    why); Cloud Build builds them as the build account.
new_accounts=0
service_account() { # NAME EMAIL DESCRIPTION
  if ! ask gcloud iam service-accounts describe "$2" --project="$PROJECT" >/dev/null 2>&1; then
    run gcloud iam service-accounts create "$1" --display-name="$3" --project="$PROJECT" --quiet
    new_accounts=1
  fi
}
service_account "$RUNTIME_SA_NAME" "$RUNTIME_SA" "firelock functions (deploy.sh)"
service_account "$BUILD_SA_NAME" "$BUILD_SA" "firelock functions' builds (deploy.sh)"

roles_of() { # EMAIL: the project roles the account holds
  ask gcloud projects get-iam-policy "$PROJECT" --flatten='bindings[].members' --filter="bindings.members:serviceAccount:$1" --format='value(bindings.role)' || true
}
# grant CMD...: a grant, tried again for a minute while a service account
# made just now is not yet known to IAM (it takes seconds).
grant() {
  local try
  for try in 1 2 3 4 5 6; do
    if run "$@" >/dev/null; then return 0; fi
    if [ "$new_accounts" = 0 ] || [ "$try" = 6 ]; then return 1; fi
    say "the new service accounts may not be known to IAM yet; trying again in 10 s"
    sleep 10
  done
}
grant_project_roles() { # EMAIL ROLE...
  local email=$1 held role
  shift
  held=$(roles_of "$email")
  for role in "$@"; do
    grep -qx -- "$role" <<<"$held" ||
      grant gcloud projects add-iam-policy-binding "$PROJECT" --member="serviceAccount:$email" --role="$role" --condition=None --quiet
  done
}
grant_project_roles "$RUNTIME_SA" roles/datastore.user roles/monitoring.metricWriter roles/cloudtrace.agent roles/firebaseauth.viewer
grant_project_roles "$BUILD_SA" roles/cloudbuild.builds.builder
# Each secret, to the runtime account alone (not the whole project's).
for env in "${secrets_used[@]}"; do
  [ -n "${secret_version[$env]:-}" ] || continue
  name=${SECRET_NAME[$env]}
  held=$(ask gcloud secrets get-iam-policy "$name" --project="$PROJECT" --flatten='bindings[].members' --filter="bindings.members:serviceAccount:$RUNTIME_SA" --format='value(bindings.role)' || true)
  grep -qx roles/secretmanager.secretAccessor <<<"$held" ||
    grant gcloud secrets add-iam-policy-binding "$name" --project="$PROJECT" --member="serviceAccount:$RUNTIME_SA" --role=roles/secretmanager.secretAccessor --condition=None --quiet
done

# 5. Firebase: on the project, the web app registered, its Hosting site
#    linked to it (then Hosting's init.json carries the app's appId), and
#    email/password sign-in (firebase.json's "auth").
if [ "$firebase_on" = 0 ]; then
  run "$FIREBASE" projects:addfirebase "$PROJECT" --non-interactive
fi
app_id=""
web_app_id() { json "(j.result || []).filter(a => a.displayName === '$WEB_APP_NAME').map(a => a.appId)[0]"; }
if apps=$(ask "$FIREBASE" apps:list WEB --project "$PROJECT" --json); then
  app_id=$(web_app_id <<<"$apps")
elif [ "$DRY_RUN" = 0 ]; then
  say "cannot list the project's web apps (the firebase CLI's error is above)"
  exit 1
fi
if [ -z "$app_id" ]; then
  # In a project without a Hosting site, this also makes the default site
  # (named after the project) and links it to the app.
  run "$FIREBASE" apps:create WEB "$WEB_APP_NAME" --project "$PROJECT" --non-interactive
  if [ "$DRY_RUN" = 0 ]; then
    app_id=$("$FIREBASE" apps:list WEB --project "$PROJECT" --json | web_app_id)
  else
    app_id=APP_ID
  fi
fi
# The site: with --no-hosting only looked up, so that a web app deployed
# before keeps its origins allowed (CORS) while the functions are deployed
# without it.
SITE=$PROJECT
site_found=0
if [ "$HOSTING" = 1 ] || [ "$SETUP_ONLY" = 0 ]; then
  if ! sites=$(ask "$FIREBASE" hosting:sites:list --project "$PROJECT" --json) && [ "$DRY_RUN" = 0 ]; then
    say "cannot list the project's Hosting sites (the firebase CLI's error is above)"
    exit 1
  fi
  if [ "$DRY_RUN" = 0 ]; then
    site_line=$(json "((j.result || {}).sites || []).filter(s => s.type === 'DEFAULT_SITE' || s.name.endsWith('/sites/$PROJECT')).map(s => s.name.split('/').pop() + ' ' + (s.appId || '-'))[0]" <<<"$sites")
    if [ -n "$site_line" ]; then site_found=1; fi
    if [ "$HOSTING" = 0 ]; then
      read -r SITE _ <<<"${site_line:-$PROJECT}"
    elif [ -z "$site_line" ]; then
      run "$FIREBASE" hosting:sites:create "$PROJECT" --app "$app_id" --project "$PROJECT" --non-interactive
    else
      read -r SITE site_app <<<"$site_line"
      if [ "$site_app" = - ]; then
        say "warning: the Hosting site $SITE is linked to no web app, so its /__/firebase/init.json has no appId (App Check needs it):"
        say "         link it once in the Firebase console: Project settings > Your apps > $WEB_APP_NAME > Link to Firebase Hosting site > $SITE"
      elif [ "$site_app" != "$app_id" ]; then
        say "note: the Hosting site $SITE is linked to the web app $site_app, not $WEB_APP_NAME ($app_id): its init.json carries that app's ID"
      fi
    fi
  fi
fi
run "$FIREBASE" deploy --only auth --project "$PROJECT" --non-interactive

if [ "$SETUP_ONLY" = 1 ]; then
  if [ "$DRY_RUN" = 1 ]; then say "dry run: nothing was changed"; else say "$PROJECT is set up; deploy with ./deploy.sh --project $PROJECT --region $REGION"; fi
  exit 0
fi

# --------------------------------------------------------------- deploy ---

# The rules and the indexes first: the functions' queries need the indexes,
# and firestore.indexes.json declares the TTL policy on the lease
# documents' expireAt too, so a later deploy with --force keeps it.
run "$FIREBASE" deploy --only firestore:rules,firestore:indexes --project "$PROJECT" --non-interactive

if [ "$HOSTING" = 1 ] || [ "$site_found" = 1 ]; then
  hosting_origins="https://$SITE.web.app,https://$SITE.firebaseapp.com"
  ALLOWED_ORIGINS="${ALLOWED_ORIGINS:+$ALLOWED_ORIGINS,}$hosting_origins"
fi

# What every function gets: its project (Cloud Run sets no
# GOOGLE_CLOUD_PROJECT for newer runtimes, and the Admin SDK checks ID
# tokens against it), the runtime account, the build account, every secret
# at its pinned version (any function may settle a payment or issue a
# ticket, and all run as the one account that may read them).
common=(--gen2 "--runtime=$RUNTIME" "--region=$REGION" "--project=$PROJECT" --source=.
  "--service-account=$RUNTIME_SA" "--build-service-account=projects/$PROJECT/serviceAccounts/$BUILD_SA")
secret_refs=""
for env in "${secrets_used[@]}"; do
  secret_refs+="${secret_refs:+,}$env=${SECRET_NAME[$env]}:${secret_version[$env]}"
done
secrets=()
[ -z "$secret_refs" ] || secrets=("--set-secrets=$secret_refs")

# HTTP functions: they verify Firebase ID tokens themselves (StripeWebhook:
# Stripe's signature; SaleState and TicketKeys are public), so IAM lets
# every caller in. The origins go in with gcloud's alternate delimiter
# (^;^), as they hold commas.
for fn in "${functions_deployed[@]}"; do
  read -ra extra <<<"${function_flags[$fn]}"
  run gcloud functions deploy "$fn" "${common[@]}" "--entry-point=$fn" --trigger-http --allow-unauthenticated \
    "--concurrency=$CONCURRENCY" "--cpu=$CPU" "--memory=$MEMORY" "--max-instances=$MAX_INSTANCES" \
    "--set-env-vars=^;^GOOGLE_CLOUD_PROJECT=$PROJECT;FIRELOCK_ALLOWED_ORIGINS=$ALLOWED_ORIGINS;FIRELOCK_METRICS=$METRICS;FIRELOCK_TRACES=$TRACES;FIRELOCK_APPCHECK=$APPCHECK;FIRELOCK_APPCHECK_APPS=$APPCHECK_APPS" \
    "${secrets[@]}" "${extra[@]}" --quiet
done

# Functions the table leaves out this time (--no-payments) are not deleted:
# a deploy never removes what may be serving. Say so.
for line in "${HTTP_FUNCTIONS[@]}"; do
  read -r name needs _ <<<"$line"
  if ! wanted "$needs" && ask gcloud functions describe "$name" --gen2 --region="$REGION" --project="$PROJECT" --format='value(name)' >/dev/null 2>&1; then
    say "note: $name, deployed before, is still deployed and keeps its secrets; delete it if it should not serve: gcloud functions delete $name --gen2 --region=$REGION --project=$PROJECT"
  fi
done

if ! ask gcloud pubsub topics describe scheduled-jobs --project="$PROJECT" >/dev/null 2>&1; then
  run gcloud pubsub topics create scheduled-jobs --project="$PROJECT" --quiet
fi
# The timeout lies well above the run lease (60s) and a delivery's wait for a
# running event (lease + 10s), and above an admitQueue run (until the next
# tick of its schedule: a minute) plus that wait: a run is never cut off
# while its lease could still be held. --retry redelivers every event the
# function does not ack. One delivery per instance, on a whole vCPU: an
# admitter's lease renewals never wait behind another run. The trigger
# calls it as the runtime account, which alone may invoke it (below).
run gcloud functions deploy RunScheduledJob "${common[@]}" --entry-point=RunScheduledJob --trigger-topic=scheduled-jobs \
  "--trigger-service-account=$RUNTIME_SA" --retry --timeout=540s --concurrency=1 --cpu=1 --memory=512Mi --max-instances=20 \
  "--set-env-vars=^;^GOOGLE_CLOUD_PROJECT=$PROJECT;FIRELOCK_METRICS=$METRICS;FIRELOCK_TRACES=$TRACES" "${secrets[@]}" --quiet
invokers=$(ask gcloud run services get-iam-policy runscheduledjob --region="$REGION" --project="$PROJECT" --flatten='bindings[].members' --filter="bindings.members:serviceAccount:$RUNTIME_SA" --format='value(bindings.role)' || true)
grep -qx roles/run.invoker <<<"$invokers" ||
  run gcloud functions add-invoker-policy-binding RunScheduledJob --region="$REGION" --project="$PROJECT" --member="serviceAccount:$RUNTIME_SA" --quiet >/dev/null

# Pub/Sub retries with backoff (an event in progress elsewhere is not
# hammered), and its ack deadline exceeds the timeout, so a delivery still
# running is not delivered a second time meanwhile.
trigger=$(ask gcloud functions describe RunScheduledJob --gen2 --region="$REGION" --project="$PROJECT" --format='value(eventTrigger.trigger)' 2>/dev/null) || true
subscription=""
if [ -n "$trigger" ]; then
  subscription=$(ask gcloud eventarc triggers describe "${trigger##*/}" --location="$REGION" --project="$PROJECT" --format='value(transport.pubsub.subscription)' 2>/dev/null) || true
fi
if [ -z "$subscription" ]; then
  if [ "$DRY_RUN" = 1 ]; then
    subscription="SUBSCRIPTION-OF-RunScheduledJob"
  else
    say "cannot find the Pub/Sub subscription of RunScheduledJob's trigger"
    exit 1
  fi
fi
run gcloud pubsub subscriptions update "${subscription##*/}" --project="$PROJECT" --ack-deadline=600 --min-retry-delay=10s --max-retry-delay=600s --quiet

scheduler_job() {
  local name=$1 schedule=$2 job=$3 verb=create
  if ask gcloud scheduler jobs describe "$name" --location="$REGION" --project="$PROJECT" >/dev/null 2>&1; then
    verb=update
  fi
  run gcloud scheduler jobs "$verb" pubsub "$name" --location="$REGION" --project="$PROJECT" \
    --schedule="$schedule" --time-zone="$TIME_ZONE" --topic=scheduled-jobs \
    --message-body="{\"job\": \"$job\", \"schedule\": \"$schedule\", \"timeZone\": \"$TIME_ZONE\"}" --quiet
}
scheduler_job firelock-rollup-counters "$SCHEDULE" rollupCounters
scheduler_job firelock-sweep-expired "$SWEEP_SCHEDULE" sweepExpired
scheduler_job firelock-admit-queue "$ADMIT_SCHEDULE" admitQueue

# The web app (built first, above), on the project's site, its rewrites
# pinned to the functions' region
# (firebase.deploy.json: firebase.json with the site and the region; a
# rewrite to a function this deploy leaves out is refused).
if [ "$HOSTING" = 1 ]; then
  run node scripts/hosting-config.mjs "--site=$SITE" "--region=$REGION" "--functions=$functions_list" --out=firebase.deploy.json
  run "$FIREBASE" deploy --only hosting --config firebase.deploy.json --project "$PROJECT" --non-interactive
fi

if [ "$DRY_RUN" = 1 ]; then
  say "dry run: nothing was changed"
else
  say "firelock deployed to $PROJECT ($REGION), as $RUNTIME_SA"
  [ "$HOSTING" = 0 ] || say "the seat map is at https://$SITE.web.app/?screening=<id>"
fi
if [ "$PAYMENTS" = 1 ]; then
  cat >&2 <<WEBHOOK
deploy.sh: Stripe's webhook endpoint (registered before the deploy, with its signing secret in
           Secret Manager as ${SECRET_NAME[STRIPE_WEBHOOK_SECRET]}), API version $STRIPE_API_VERSION:
             URL     $WEBHOOK_URL
             events  $STRIPE_EVENTS
           A new signing secret (Stripe's "roll secret") is a new version of that secret, then a
           deploy (docs/operating.md: rotating a secret).
WEBHOOK
fi
