// The commented config.yaml that `tenax init` and `tenax profile create` write: every section
// explained, the defaults spelled out, and a real provider ready to uncomment.

export interface TemplateOptions {
  profile: string;
  gatewayPort: number;
  dashboardPort: number;
}

/** The example provider block; the template carries it commented out with "# " before each line. */
export const EXAMPLE_PROVIDER_YAML = `model: { provider: main, name: gpt-4o-mini }  # the primary model: a provider below, one of its models
providers:
  main:
    type: openai                     # openai (any OpenAI-compatible API) | anthropic | simulator
    base_url: https://api.openai.com/v1
    api_keys: ["\${OPENAI_API_KEY}"]  # the credential pool, used in order; more keys rotate
    max_concurrency: 8               # at most this many requests in flight to this provider
    models:
      gpt-4o-mini: { context_window: 128000, max_output_tokens: 16384 }`;

/** Prefix each line with "# " (the form the example takes in the template). */
export function commentOut(yaml: string): string {
  return yaml
    .split("\n")
    .map((line) => `# ${line}`)
    .join("\n");
}

export function renderConfigTemplate(options: TemplateOptions): string {
  return `# Tenax configuration for the profile "${options.profile}".
#
# Every key is optional: one left out takes the default shown here. An unknown key or a bad value
# stops Tenax with the file, the line and the key. Inside a value, \${VAR} is replaced by the
# variable VAR from the environment, or else from the file .env next to this one (KEY=VALUE lines);
# \${VAR:-fallback} gives a fallback for an unset or empty VAR, and $\${ stands for a literal "\${".
# Keep API keys in .env (chmod 600) rather than in this file.

# --- Model and providers -------------------------------------------------------------------------
# With no model and no providers, Tenax uses its built-in simulator: a local, deterministic
# stand-in for a real model, good for trying Tenax out (it says so when it starts). To use a real
# OpenAI-compatible API, remove the "# " in front of each line of the example below and put the
# key in .env (OPENAI_API_KEY=...). For another OpenAI-compatible server, change base_url and the
# model names; for Anthropic, use type: anthropic.
${commentOut(EXAMPLE_PROVIDER_YAML)}
# A model's max_output_tokens may be left out: it is then 4096, or a quarter of its
# context_window when that is smaller. Also per provider, optional: timeouts in seconds,
# { connect: 10, first_byte: 60, idle: 60, total: 600 }. A server that needs no key (Ollama, llama.cpp) leaves api_keys out. A provider of
# type simulator runs in-process unless base_url points at \`tenax simulator --port P\`.

# Primary-model fallback chain, tried in order, each at most once per turn:
# fallback:
#   - { provider: backup, name: other-model }

# Side tasks (compression, title, vision) each resolve their own model chain; timeout in seconds:
# auxiliary:
#   compression: { provider: main, name: small-model, timeout: 120, fallback: [] }
#   title: { provider: main, name: small-model }   # names new gateway sessions; unset: their first message

# --- Behaviour ----------------------------------------------------------------------------------
compression:
  enabled: true
  threshold: 0.5        # compress when a conversation fills this fraction of the context window
  keep_recent: 0.2      # the recent tail kept word for word, as a fraction of the window
  cooldown_seconds: [60, 300, 900]  # pause after consecutive summarizer failures (the last repeats)

agent:
  max_iterations: 50    # model calls in one turn before it stops with a message
  max_continuations: 2  # a reply cut by the output limit is continued this often, then kept as partial
  identical_call_limit: 3  # the same tool call with the same result this often in a row halts the turn
  failing_call_limit: 2    # the same tool call failing this often is blocked for the rest of the turn
  lease_seconds: 60     # a running turn renews its lease; a hung one is noticed once it expires
  max_subagents: 3      # delegate_task subagents running at once
  stall_after: 120      # seconds with no progress (provider bytes, tool output, events): the turn is stalled
  turn_deadline: 1800   # seconds a turn may run before it is ended (code turn_deadline); cron keeps --timeout

retry:
  max_attempts: 4       # attempts per model call (1 to 20) before falling back

breaker:                # a circuit breaker per model, shared by every process of this profile
  enabled: true
  failures: 5           # failures in a row that say the model is unwell (5xx, timeouts, unreachable) open it
  window: 60            # seconds: failures further apart than this start the count over
  cooldown: 30          # seconds an open circuit skips the model (to the fallback, or circuit_open at once)
  max_cooldown: 600     # after the cool-down one probe call goes; each failed probe doubles it up to this

# --- Servers -------------------------------------------------------------------------------------
gateway:
  host: 127.0.0.1       # loopback; on another host the key is a must (auth: none is refused)
  port: ${options.gatewayPort}            # unique to this profile
  # api_key: "\${TENAX_API_KEY}"   # the default; with neither set, the first start writes a new
  #                                 # TENAX_API_KEY to this profile's .env. Clients send it as
  #                                 # Authorization: Bearer KEY
  # auth: none          # no key at all (loopback only): any program of this machine can run the agent
  # cors_origins: ["https://app.example.com"]   # web pages allowed to call it; other origins get 403
  # allowed_hosts: ["gateway.example.lan"]      # names it also answers to; other Host names get 421
  # default_model: tenax   # where a chat's unknown model id goes (tenax, or PROVIDER/NAME);
  #                        # left out, an unknown id is a 404 listing the valid ones
  drain_timeout: 30     # seconds a stopping gateway waits for running turns
  max_turns: 16         # agent turns run at once; more requests get 429
  session_queue: 8      # messages that wait, in order, for a session's running turn; more get 429
  session_wait: 60      # several gateways on one PostgreSQL: seconds a message waits for its session's turn on another (then 409)
  auto_resume: true     # after a crash, resume the turns it interrupted (suspended at the 3rd)
  run_retention_hours: 24   # background runs (/v1/runs) and their events are kept this long
  # connections:        # what keeps a flood of idle sockets from taking it down (docs/SECURITY.md);
  #                     # the dashboard takes the same section. Seconds, and a count:
  #   headers_timeout: 10     # a connection sends a complete request head this soon, or is closed
  #   request_timeout: 60     # receiving a whole request; never cuts a long answer or stream
  #   keep_alive_timeout: 5   # an idle connection waits this long for its next request
  #   max_connections: 1000   # past it the longest-idle connection makes room (keep it above 511)

dashboard:
  host: 127.0.0.1
  port: ${options.dashboardPort}            # unique to this profile
  # public_url: https://agent.example.com   # behind a TLS reverse proxy: links are made on it, cookies are Secure
  auth:
    mode: token           # token (one-time links: tenax dashboard link) | oidc | none (no login; loopback only)
    access_ttl: 900       # seconds an access session lasts before its refresh token renews it
    refresh_ttl: 2592000  # seconds (30 days) a login lasts unused; each refresh starts it again
    grace: 5              # seconds a rotated refresh token still gets the same successor (at most 10)
    # oidc:               # mode oidc; register PUBLIC_URL/auth/oidc/callback at the provider
    #   issuer: https://accounts.example.com
    #   client_id: tenax-dashboard
    #   client_secret: "\${DASHBOARD_OIDC_SECRET}"   # put DASHBOARD_OIDC_SECRET=... in this profile's .env
    #   allowed: [you@example.com]                   # subjects, or emails the provider marks verified
    #   timeout: 10                                  # seconds any one request to the provider may take

logs:                   # logs/gateway.log, one JSON object a line
  max_mb: 10            # rotated at this size
  keep: 3               # old files kept (gateway.log.1 ...)

health:                 # the gateway's background checks behind /health
  probe_interval: 5     # seconds between checks of the store, keys and disk
  probe_timeout: 10     # a check that takes longer is stopped and reported
  integrity_interval: 120   # seconds: SQLite checks every page of the store at least this often (0: never)
  integrity_cpu_percent: 1  # of one core at most, on average, for those checks (a big store: less often)
  provider_probe: connect   # how providers nobody called lately are looked at: connect (TCP),
                            # models (GET /models with the key) or off; none costs a token
  provider_probe_interval: 60  # seconds between those looks
  provider_probe_timeout: 5    # a look that takes longer counts as a timeout
# instances:            # the profile's processes sharing a PostgreSQL store (docs/CONFIG.md)
#   clock_skew_max: 2   # seconds a host's clock may be off from the database's before /health is
#                       # degraded; at 5 times this a gateway refuses to start

# --- The agent's safety boundary (docs/SECURITY.md) -----------------------------------------------
tools:
  exec:                 # what the terminal tool's commands may do
    mode: ask           # deny | allowlist | ask (the rest wait for an approval) | full (everything runs)
    allow: []           # patterns that run without an approval, e.g. ["npm test", "npm run *"]
    approval_timeout: 300  # seconds before a pending approval counts as denied
    env: []             # more of Tenax's environment variables that commands inherit
    sandbox: auto       # auto (bubblewrap when installed) | bwrap (required) | none; see tenax doctor
  files:                # where read_file, write_file, patch and search_files act
    mode: roots         # roots: the working folder and the roots below; full: anywhere
    roots: []           # absolute or ~/... folders or files; secret files stay refused

# --- Scheduled jobs (tenax cron add; the jobs are kept in the store) ------------------------------
cron:
  enabled: true         # the gateway runs due jobs; tenax cron tick runs them when no gateway does
  # timezone: Europe/Berlin  # for schedules that name none; the machine's zone when unset
  max_concurrent: 4     # job runs at once (within gateway.max_turns); the rest wait, claimed
  default_timeout: 600  # seconds a run may take when its job sets no --timeout
  run_retention_days: 30  # how long run records are kept

# --- Chat platforms (docs/PLATFORMS.md: "Connect a Telegram bot") ---------------------------------
# platforms:
#   telegram:
#     token: "\${TELEGRAM_BOT_TOKEN}"   # from @BotFather; put TELEGRAM_BOT_TOKEN=... in this profile's .env
#     allowed_users: [123456789]      # Telegram user ids that reach the agent; anyone else is refused
#     mode: polling                   # polling (no public URL needed) | webhook (needs webhook_url)

# --- MCP tool servers (docs/MCP.md): their tools reach the model as mcp__SERVER__TOOL ------------
# Started with the gateway and tenax chat, restarted with backoff while they fail; try one with
# tenax mcp test NAME. Values may read \${VAR} from this profile's .env (header values are secrets).
# mcp:
#   servers:
#     files: { command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"], timeout: 60 }
#     remote: { url: https://mcp.example.com/mcp, headers: { Authorization: "Bearer \${MCP_TOKEN}" } }
#     # approve: [tool, ...] or approve: all makes those tools wait for an approval, as tools.exec does

# --- Traces (OpenTelemetry over OTLP/HTTP; docs/OPERATIONS.md: "Traces") -----------------------
# Off unless this section names an endpoint or OTEL_EXPORTER_OTLP_ENDPOINT is set; a key set here
# wins over the OTEL_* variable that says the same. One trace per turn: model calls, tools,
# compression, store commits; never a prompt, a reply or a secret.
# telemetry:
#   endpoint: http://127.0.0.1:4318   # the collector's OTLP/HTTP base (Jaeger, Tempo, an OTel collector)
#   headers: { Authorization: "Bearer \${OTEL_TOKEN}" }   # secret values: redacted like keys
#   service_name: tenax               # service.name of the spans (OTEL_SERVICE_NAME otherwise)
#   enabled: true                     # false: no traces even when OTEL_* says where

# --- Checkpoints and storage ---------------------------------------------------------------------
checkpoints:
  enabled: false        # snapshot project files before the agent changes them
  max_snapshots: 50     # snapshots kept; the oldest are pruned

store:                  # the session store
  engine: sqlite        # sqlite: state.db in this folder (embedded); postgres: the database at url
  # url: "\${TENAX_DATABASE_URL}"   # engine postgres: postgresql://USER:PASSWORD@HOST:5432/DB (a secret)
  # pool_size: 10       # engine postgres: connections the pool may open
  synchronous: full     # full: a committed message survives power loss; normal: faster, survives kill -9
  busy_timeout_ms: 100  # one wait for another process's write lock (it blocks, so keep it short)
  write_retry_budget_ms: 30000      # how long a write keeps retrying, with jitter, before it fails
  integrity_check_timeout_ms: 2000  # budget of the page check when the store opens (0: skip)
`;
}
