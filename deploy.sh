#!/usr/bin/env bash
# Deploys firelock to Google Cloud: the HTTP functions BookSeats,
# CancelBooking, HoldSeats, ExtendHold, ConfirmHold, ReleaseHold, JoinQueue,
# OperateSale, CheckoutHold, StripeWebhook, CheckIn, TransferTicket and
# TicketKeys (CORS for --allowed-origins; the Stripe secret key, the webhook
# signing secret and the ticket key from Secret Manager), the Pub/Sub-triggered RunScheduledJob (with
# retries), the Cloud Scheduler jobs that publish to scheduled-jobs,
# firestore.rules and firestore.indexes.json, the TTL policy on the lease
# documents' expireAt, and the web app (web/) on Firebase Hosting, built to
# call the deployed functions. Every function exports the metrics of
# CONTRACT §9 to Cloud Monitoring (FIRELOCK_METRICS=cloud) and its traces to
# Cloud Trace (FIRELOCK_TRACES=cloud); docs/metrics.md.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: ./deploy.sh --project PROJECT --region REGION [options]

  --project ID          Google Cloud / Firebase project (or FIRELOCK_PROJECT, GOOGLE_CLOUD_PROJECT)
  --region REGION       region of the functions and scheduler jobs, e.g. europe-west1 (or FIRELOCK_REGION)
  --runtime ID          Cloud Functions runtime (default go126; checked against `gcloud functions runtimes list`)
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
  --no-payments         deploy without Stripe: no CheckoutHold or StripeWebhook, no Stripe secrets
                        (a priced screening then cannot be paid for: docs/payments.md)
  --ticket-key-secret NAME  Secret Manager secret holding the ticket keys (CONTRACT §13: a JWK Set
                        whose first key signs; docs/door.md makes one and rotates it; default
                        FIRELOCK_TICKET_KEY; the functions read it as FIRELOCK_TICKET_KEY)
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
  --no-hosting          leave the web app (Firebase Hosting) alone
  --no-metrics          the functions export no metrics to Cloud Monitoring
                        (FIRELOCK_METRICS=off; default cloud: see docs/metrics.md)
  --no-traces           the functions export no traces to Cloud Trace
                        (FIRELOCK_TRACES=off; default cloud)
  --dry-run             print every command that would change something, run none
  -h, --help            this text

Needs gcloud (logged in, with the Cloud Functions, Cloud Build, Pub/Sub, Cloud Scheduler,
Firestore, Cloud Monitoring, Cloud Trace and Secret Manager APIs enabled; the functions' service
account needs roles/monitoring.metricWriter and roles/cloudtrace.agent, which the default one has,
and roles/secretmanager.secretAccessor on the two Stripe secrets and the ticket key), the firebase CLI (on PATH, or tools/ after `make deps`), and
npm to build the web app. The app is served at https://PROJECT.web.app and
https://PROJECT.firebaseapp.com; both origins are added to --allowed-origins, and the app
gets its Firebase config from Hosting (/__/firebase/init.json) at run time.
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
STRIPE_KEY_SECRET="${FIRELOCK_STRIPE_KEY_SECRET:-STRIPE_SECRET_KEY}"
STRIPE_WEBHOOK_SECRET_NAME="${FIRELOCK_STRIPE_WEBHOOK_SECRET:-STRIPE_WEBHOOK_SECRET}"
TICKET_KEY_SECRET="${FIRELOCK_TICKET_KEY_SECRET:-FIRELOCK_TICKET_KEY}"
PAYMENTS=1
# The API version of the webhook's events: the one stripe-go v85 pins
# (deploy_test.go checks it against stripe.APIVersion).
STRIPE_API_VERSION=2026-03-25.dahlia
DRY_RUN=0
HOSTING=1
METRICS=cloud
TRACES=cloud

need_value() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "deploy.sh: $1 needs a value" >&2; usage >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --project|--region|--runtime|--schedule|--sweep-schedule|--admit-schedule|--time-zone|--allowed-origins|--stripe-key-secret|--stripe-webhook-secret|--ticket-key-secret|--app-check|--app-check-apps)
      need_value "$@"
      case "$1" in
        --project) PROJECT=$2 ;; --region) REGION=$2 ;; --runtime) RUNTIME=$2 ;;
        --schedule) SCHEDULE=$2 ;; --sweep-schedule) SWEEP_SCHEDULE=$2 ;; --time-zone) TIME_ZONE=$2 ;;
        --admit-schedule) ADMIT_SCHEDULE=$2 ;;
        --allowed-origins) ALLOWED_ORIGINS=$2 ;;
        --stripe-key-secret) STRIPE_KEY_SECRET=$2 ;; --stripe-webhook-secret) STRIPE_WEBHOOK_SECRET_NAME=$2 ;;
        --ticket-key-secret) TICKET_KEY_SECRET=$2 ;;
        --app-check) APPCHECK=$2 ;; --app-check-apps) APPCHECK_APPS=$2 ;;
      esac
      shift 2 ;;
    --project=*) PROJECT=${1#*=}; shift ;;
    --region=*) REGION=${1#*=}; shift ;;
    --runtime=*) RUNTIME=${1#*=}; shift ;;
    --schedule=*) SCHEDULE=${1#*=}; shift ;;
    --sweep-schedule=*) SWEEP_SCHEDULE=${1#*=}; shift ;;
    --admit-schedule=*) ADMIT_SCHEDULE=${1#*=}; shift ;;
    --time-zone=*) TIME_ZONE=${1#*=}; shift ;;
    --allowed-origins=*) ALLOWED_ORIGINS=${1#*=}; shift ;;
    --stripe-key-secret=*) STRIPE_KEY_SECRET=${1#*=}; shift ;;
    --stripe-webhook-secret=*) STRIPE_WEBHOOK_SECRET_NAME=${1#*=}; shift ;;
    --ticket-key-secret=*) TICKET_KEY_SECRET=${1#*=}; shift ;;
    --app-check=*) APPCHECK=${1#*=}; shift ;;
    --app-check-apps=*) APPCHECK_APPS=${1#*=}; shift ;;
    --no-payments) PAYMENTS=0; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    --no-hosting) HOSTING=0; shift ;;
    --no-metrics) METRICS=off; shift ;;
    --no-traces) TRACES=off; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "deploy.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

case "$APPCHECK" in
  enforce|monitor|off) ;;
  *) echo "deploy.sh: --app-check $APPCHECK: want enforce, monitor or off" >&2; exit 2 ;;
esac

missing=()
[ -n "$PROJECT" ] || missing+=("--project")
[ -n "$REGION" ] || missing+=("--region")
if [ ${#missing[@]} -gt 0 ]; then
  echo "deploy.sh: missing ${missing[*]}" >&2
  usage >&2
  exit 2
fi
# An origin is scheme://host[:port], nothing more: a path or a * would never match.
IFS=',' read -ra origins <<<"$ALLOWED_ORIGINS"
for o in "${origins[@]}"; do
  o="${o// /}"
  if [ -n "$o" ] && ! [[ "$o" =~ ^https?://[A-Za-z0-9.-]+(:[0-9]+)?$ ]]; then
    echo "deploy.sh: allowed origin \"$o\" is not scheme://host[:port] (e.g. https://tickets.example.com)" >&2
    exit 2
  fi
done

# The function reads the schedule from each message to find its tick: a
# schedule it cannot parse would make every message a dropped bad payload.
for s in "$SCHEDULE" "$SWEEP_SCHEDULE" "$ADMIT_SCHEDULE"; do
  if [ "$(wc -w <<<"$s")" -ne 5 ] || [[ "$s" == *'"'* ]]; then
    echo "deploy.sh: schedule \"$s\" is not a 5-field cron expression (minute hour day-of-month month day-of-week)" >&2
    exit 2
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
    elif [[ $range =~ ^[0-9]{1,2}$ ]]; then lo=$((10#$range)) hi=$lo; [[ $it == */* ]] && hi=59
    else echo -1; return; fi
    if ! [[ $step =~ ^[0-9]{1,2}$ ]] || [ $((10#$step)) -lt 1 ] || [ "$hi" -gt 59 ] || [ "$lo" -gt "$hi" ]; then echo -1; return; fi
    for ((m = lo; m <= hi; m += 10#$step)); do on[m]=1; done
  done
  for ((m = 0; m < 60; m++)); do
    [ -n "${on[m]:-}" ] || continue
    [ "$first" -lt 0 ] && first=$m
    [ "$prev" -ge 0 ] && [ $((m - prev)) -gt "$gap" ] && gap=$((m - prev))
    prev=$m
  done
  [ $((first + 60 - prev)) -gt "$gap" ] && gap=$((first + 60 - prev))
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

if [ "$HOSTING" = 1 ]; then
  hosting_origins="https://$PROJECT.web.app,https://$PROJECT.firebaseapp.com"
  ALLOWED_ORIGINS="${ALLOWED_ORIGINS:+$ALLOWED_ORIGINS,}$hosting_origins"
fi
# The functions' base URL, which the web app is built to call.
FUNCTIONS_URL="https://$REGION-$PROJECT.cloudfunctions.net"

cd "$(dirname "$0")"

command -v gcloud >/dev/null || { echo "deploy.sh: gcloud not found: install the Google Cloud SDK" >&2; exit 1; }
if command -v firebase >/dev/null; then
  FIREBASE=firebase
elif [ -x tools/node_modules/.bin/firebase ]; then
  FIREBASE=tools/node_modules/.bin/firebase
else
  echo "deploy.sh: the firebase CLI is needed for the rules: run 'make deps' or 'npm install -g firebase-tools'" >&2
  exit 1
fi

# Commands that change something: printed in a dry run, run otherwise.
run() {
  if [ "$DRY_RUN" = 1 ]; then
    printf '+'; printf ' %q' "$@"; printf '\n'
  else
    echo "+ $*" >&2
    "$@"
  fi
}

# Read-only queries run in a dry run too: they change nothing.
runtimes=$(gcloud functions runtimes list --project="$PROJECT" --region="$REGION" --format='value(name)')
if ! grep -qx -- "$RUNTIME" <<<"$runtimes"; then
  echo "deploy.sh: runtime $RUNTIME is not offered in $REGION; offered: $(echo $runtimes)" >&2
  exit 1
fi

common=(--gen2 "--runtime=$RUNTIME" "--region=$REGION" "--project=$PROJECT" --source=.)
http_functions=(BookSeats CancelBooking HoldSeats ExtendHold ConfirmHold ReleaseHold JoinQueue OperateSale)

# Payments (CONTRACT §10): every function may settle a payment at Stripe
# (a release expires a session, a cancellation refunds, the sweep does what
# they could not), so each gets both secrets from Secret Manager. They must
# exist before the deploy: a function whose secret is missing fails to start.
secrets=()
if [ "$PAYMENTS" = 1 ]; then
  for s in "$STRIPE_KEY_SECRET" "$STRIPE_WEBHOOK_SECRET_NAME"; do
    if ! gcloud secrets describe "$s" --project="$PROJECT" >/dev/null 2>&1; then
      echo "deploy.sh: the Secret Manager secret $s does not exist in $PROJECT. Create it first:" >&2
      echo "           printf %s 'sk_live_...' | gcloud secrets create $STRIPE_KEY_SECRET --data-file=- --project=$PROJECT" >&2
      echo "           printf %s 'whsec_...'   | gcloud secrets create $STRIPE_WEBHOOK_SECRET_NAME --data-file=- --project=$PROJECT" >&2
      echo "           (the webhook secret comes from registering the endpoint: see the end of a deploy," >&2
      echo "           and docs/payments.md), or deploy with --no-payments." >&2
      exit 1
    fi
  done
  secrets=("STRIPE_SECRET_KEY=$STRIPE_KEY_SECRET:latest" "STRIPE_WEBHOOK_SECRET=$STRIPE_WEBHOOK_SECRET_NAME:latest")
  http_functions+=(CheckoutHold StripeWebhook)
fi

# Tickets (CONTRACT §13): every function that confirms a booking signs its
# tickets, so every function gets the ticket key; without it they refuse to
# start. docs/door.md says how to make one and how to rotate it.
if ! gcloud secrets describe "$TICKET_KEY_SECRET" --project="$PROJECT" >/dev/null 2>&1; then
  echo "deploy.sh: the Secret Manager secret $TICKET_KEY_SECRET (the ticket keys) does not exist in $PROJECT." >&2
  echo "           Make one (docs/door.md, \"The keys\") and create it:" >&2
  echo "           gcloud secrets create $TICKET_KEY_SECRET --data-file=ticket-key.json --project=$PROJECT" >&2
  exit 1
fi
secrets+=("FIRELOCK_TICKET_KEY=$TICKET_KEY_SECRET:latest")
http_functions+=(CheckIn TransferTicket TicketKeys)
set_secrets="--set-secrets=$(IFS=,; echo "${secrets[*]}")"

# HTTP functions: they verify Firebase ID tokens themselves (StripeWebhook:
# Stripe's signature), so IAM lets every caller in. The origins go in with
# gcloud's alternate delimiter (^;^), as they hold commas.
for fn in "${http_functions[@]}"; do
  run gcloud functions deploy "$fn" "${common[@]}" "--entry-point=$fn" --trigger-http --allow-unauthenticated \
    "--set-env-vars=^;^FIRELOCK_ALLOWED_ORIGINS=$ALLOWED_ORIGINS;FIRELOCK_METRICS=$METRICS;FIRELOCK_TRACES=$TRACES;FIRELOCK_APPCHECK=$APPCHECK;FIRELOCK_APPCHECK_APPS=$APPCHECK_APPS" "$set_secrets"
done

if ! gcloud pubsub topics describe scheduled-jobs --project="$PROJECT" >/dev/null 2>&1; then
  run gcloud pubsub topics create scheduled-jobs --project="$PROJECT"
fi
# The timeout lies well above the run lease (60s) and a delivery's wait for a
# running event (lease + 10s), and above an admitQueue run (until the next
# tick of its schedule: a minute) plus that wait: a run is never cut off
# while its lease could still be held. --retry redelivers every event the
# function does not ack.
run gcloud functions deploy RunScheduledJob "${common[@]}" --entry-point=RunScheduledJob --trigger-topic=scheduled-jobs --retry --timeout=540s \
  "--set-env-vars=FIRELOCK_METRICS=$METRICS,FIRELOCK_TRACES=$TRACES" "$set_secrets"

# Pub/Sub retries with backoff (an event in progress elsewhere is not
# hammered), and its ack deadline exceeds the timeout, so a delivery still
# running is not delivered a second time meanwhile.
trigger=$(gcloud functions describe RunScheduledJob --gen2 --region="$REGION" --project="$PROJECT" --format='value(eventTrigger.trigger)' 2>/dev/null || true)
subscription=""
if [ -n "$trigger" ]; then
  subscription=$(gcloud eventarc triggers describe "${trigger##*/}" --location="$REGION" --project="$PROJECT" --format='value(transport.pubsub.subscription)' 2>/dev/null || true)
fi
if [ -z "$subscription" ]; then
  if [ "$DRY_RUN" = 1 ]; then
    subscription="SUBSCRIPTION-OF-RunScheduledJob"
  else
    echo "deploy.sh: cannot find the Pub/Sub subscription of RunScheduledJob's trigger" >&2
    exit 1
  fi
fi
run gcloud pubsub subscriptions update "${subscription##*/}" --project="$PROJECT" --ack-deadline=600 --min-retry-delay=10s --max-retry-delay=600s

scheduler_job() {
  local name=$1 schedule=$2 job=$3 verb=create
  if gcloud scheduler jobs describe "$name" --location="$REGION" --project="$PROJECT" >/dev/null 2>&1; then
    verb=update
  fi
  run gcloud scheduler jobs "$verb" pubsub "$name" --location="$REGION" --project="$PROJECT" \
    --schedule="$schedule" --time-zone="$TIME_ZONE" --topic=scheduled-jobs \
    --message-body="{\"job\": \"$job\", \"schedule\": \"$schedule\", \"timeZone\": \"$TIME_ZONE\"}"
}
scheduler_job firelock-rollup-counters "$SCHEDULE" rollupCounters
scheduler_job firelock-sweep-expired "$SWEEP_SCHEDULE" sweepExpired
scheduler_job firelock-admit-queue "$ADMIT_SCHEDULE" admitQueue

# The rules, and the indexes the waiting room queries (with the exemptions
# that keep its time-ordered fields off single-field indexes).
run "$FIREBASE" deploy --only firestore:rules,firestore:indexes --project "$PROJECT" --non-interactive

# The web app, built from its lock file to call this deployment's functions.
if [ "$HOSTING" = 1 ]; then
  if [ "$APPCHECK" = enforce ] && [ -z "${VITE_RECAPTCHA_SITE_KEY:-}" ]; then
    echo "deploy.sh: warning: --app-check enforce, but VITE_RECAPTCHA_SITE_KEY is not set: the web app built now sends no App Check token, and its joins, holds, bookings and checkouts will be refused (401 app_check_failed)" >&2
  fi
  command -v npm >/dev/null || { echo "deploy.sh: npm is needed to build the web app (or pass --no-hosting)" >&2; exit 1; }
  run npm --prefix web ci --no-audit --no-fund
  run env "VITE_FUNCTIONS_URL=$FUNCTIONS_URL" npm --prefix web run build
  run "$FIREBASE" deploy --only hosting --project "$PROJECT" --non-interactive
fi

# Garbage collection of lease documents a day after their lease ended (expireAt);
# job runs are swept by sweepExpired instead, with their deliveries.
for group in locks seatLocks mutex_critical_data; do
  run gcloud firestore fields ttls update expireAt --collection-group="$group" --enable-ttl --project="$PROJECT" --async
done

if [ "$DRY_RUN" = 1 ]; then
  echo "deploy.sh: dry run: nothing was changed" >&2
else
  echo "deploy.sh: firelock deployed to $PROJECT ($REGION)" >&2
  [ "$HOSTING" = 0 ] || echo "deploy.sh: the seat map is at https://$PROJECT.web.app/?screening=<id>" >&2
fi
if [ "$PAYMENTS" = 1 ]; then
  cat >&2 <<WEBHOOK
deploy.sh: register Stripe's webhook endpoint (Dashboard > Developers > Webhooks, or the CLI:
           stripe webhook_endpoints create --url=... --enabled-events=...), API version $STRIPE_API_VERSION:
             URL     $FUNCTIONS_URL/StripeWebhook
             events  checkout.session.completed checkout.session.async_payment_succeeded
                     checkout.session.expired checkout.session.async_payment_failed
           then put its signing secret in Secret Manager, and deploy again for the functions to read it:
             printf %s 'whsec_...' | gcloud secrets versions add $STRIPE_WEBHOOK_SECRET_NAME --data-file=- --project=$PROJECT
WEBHOOK
fi
