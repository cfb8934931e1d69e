{{/* Names and labels. */}}
{{- define "vllm-responder.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vllm-responder.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every resource; each adds its app.kubernetes.io/component. */}}
{{- define "vllm-responder.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "vllm-responder.baseSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "vllm-responder.baseSelectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm-responder.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The responder's resources and pods (the component keeps the bundled Redis out of its selectors). */}}
{{- define "vllm-responder.labels" -}}
{{ include "vllm-responder.commonLabels" . }}
app.kubernetes.io/component: responder
{{- end -}}

{{- define "vllm-responder.selectorLabels" -}}
{{ include "vllm-responder.baseSelectorLabels" . }}
app.kubernetes.io/component: responder
{{- end -}}

{{- define "vllm-responder.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vllm-responder.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "vllm-responder.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "vllm-responder.redisName" -}}
{{- printf "%s-redis" (include "vllm-responder.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Redis URL the responder uses: redis.url, else the bundled Redis, else empty (in memory). */}}
{{- define "vllm-responder.redisURL" -}}
{{- if .Values.redis.url -}}
{{- .Values.redis.url -}}
{{- else if .Values.redis.bundled.enabled -}}
{{- printf "redis://%s:6379/0" (include "vllm-responder.redisName" .) -}}
{{- end -}}
{{- end -}}

{{/*
The secrets table: values key, config section, config key, file name under /etc/vllm-responder/secrets.
*/}}
{{- define "vllm-responder.secretTable" -}}
- [slackBotToken, slack, bot_token_file, slack-bot-token]
- [slackSigningSecret, slack, signing_secret_file, slack-signing-secret]
- [slackAppToken, slack, app_token_file, slack-app-token]
- [webhookBearerToken, webhook, bearer_token_file, webhook-bearer-token]
- [prometheusBearerToken, prometheus, bearer_token_file, prometheus-bearer-token]
- [redisPassword, redis, password_file, redis-password]
- [profileBearerToken, profile, bearer_token_file, profile-bearer-token]
- [mcpBearerToken, mcp, bearer_token_file, mcp-bearer-token]
- [teamsWebhookURL, teams, webhook_url_file, teams-webhook-url]
{{- end -}}

{{- define "vllm-responder.createdSecretName" -}}
{{- printf "%s-secrets" (include "vllm-responder.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The secrets in use, as a YAML list of {name, secret, key, section, configKey, file}: an
existingSecret wins; else a non-empty createSecret value when createSecret.enabled.
*/}}
{{- define "vllm-responder.secretsInUse" -}}
{{- $root := . -}}
{{- $out := list -}}
{{- range (include "vllm-responder.secretTable" . | fromYamlArray) -}}
{{- $name := index . 0 -}}
{{- $ref := index $root.Values.secrets $name -}}
{{- if not $ref -}}{{- fail (printf "secrets.%s: missing (keep the entry, with existingSecret empty to not use it)" $name) -}}{{- end -}}
{{- $entry := dict "name" $name "section" (index . 1) "configKey" (index . 2) "file" (index . 3) -}}
{{- if $ref.existingSecret -}}
{{- if not $ref.key -}}{{- fail (printf "secrets.%s.key: required with existingSecret" $name) -}}{{- end -}}
{{- $out = append $out (merge (dict "secret" $ref.existingSecret "key" $ref.key) $entry) -}}
{{- else if and $root.Values.createSecret.enabled (index $root.Values.createSecret $name) -}}
{{- $out = append $out (merge (dict "secret" (include "vllm-responder.createdSecretName" $root) "key" (index . 3)) $entry) -}}
{{- end -}}
{{- end -}}
{{- /* The signing secrets of config.outbound_webhooks, by entry name (outboundWebhookSecrets);
       the config helper sets each entry's secret_file (no section key of their own). */ -}}
{{- range $name, $ref := (default dict $root.Values.outboundWebhookSecrets) -}}
{{- if not (and $ref.existingSecret $ref.key) -}}{{- fail (printf "outboundWebhookSecrets.%s: existingSecret and key are required" $name) -}}{{- end -}}
{{- $out = append $out (dict "name" (printf "outboundWebhookSecrets.%s" $name) "secret" $ref.existingSecret "key" $ref.key "section" "" "configKey" "" "file" (printf "webhook-%s" $name)) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* Checks that fail the template with a message saying what to set. */}}
{{- define "vllm-responder.validate" -}}
{{- $sentinel := dig "sentinel" "masterName" "" .Values.redis -}}
{{- if and (ge (int .Values.replicaCount) 2) (not (include "vllm-responder.redisURL" .)) (not $sentinel) -}}
{{- fail (printf "replicaCount is %d: with 2 or more replicas the responder needs shared state (dedup claims, Slack threads, profile locks). Set redis.url=redis://HOST:6379/0 for an existing Redis, redis.sentinel.masterName and redis.sentinel.addrs for Sentinel, or redis.bundled.enabled=true, or replicaCount=1" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if and $sentinel .Values.redis.url -}}
{{- fail "redis: set url or sentinel.masterName, not both" -}}
{{- end -}}
{{- if and $sentinel (not (dig "sentinel" "addrs" list .Values.redis)) -}}
{{- fail "redis.sentinel.addrs: required with redis.sentinel.masterName (host:port of each sentinel)" -}}
{{- end -}}
{{- if hasKey (default dict .Values.config.redis) "sentinel" -}}
{{- fail "config.redis.sentinel: use redis.sentinel (top level) instead, the chart renders it" -}}
{{- end -}}
{{- if not (dig "prometheus" "url" "" .Values.config) -}}
{{- fail "config.prometheus.url is required: the Prometheus that scrapes your vLLM pods" -}}
{{- end -}}
{{- range $k := list "listen" -}}
{{- if hasKey $.Values.config $k -}}{{- fail (printf "config.%s: set by the chart (containerPort); remove it from config" $k) -}}{{- end -}}
{{- end -}}
{{- if hasKey (default dict .Values.config.redis) "url" -}}
{{- fail "config.redis.url: use redis.url (top level) instead, the chart renders it" -}}
{{- end -}}
{{- if and .Values.playbooks.files .Values.playbooks.existingConfigMap -}}
{{- fail "playbooks: set files or existingConfigMap, not both" -}}
{{- end -}}
{{- if and (dig "mcp" "enabled" false .Values.config) (not (or .Values.secrets.mcpBearerToken.existingSecret (and .Values.createSecret.enabled .Values.createSecret.mcpBearerToken))) -}}
{{- fail "config.mcp.enabled is true: set secrets.mcpBearerToken.existingSecret (the bearer token MCP clients send to /mcp)" -}}
{{- end -}}
{{- if and (dig "slack" "socket_mode" false .Values.config) (not (or .Values.secrets.slackAppToken.existingSecret (and .Values.createSecret.enabled .Values.createSecret.slackAppToken))) -}}
{{- fail "config.slack.socket_mode is true: set secrets.slackAppToken.existingSecret (an xapp- token with connections:write)" -}}
{{- end -}}
{{- end -}}

{{/* config.yaml: config from values plus what the chart owns. */}}
{{- define "vllm-responder.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $_ := set $c "listen" (printf ":%d" (int .Values.containerPort)) -}}
{{- $redis := default dict (get $c "redis") -}}
{{- if dig "sentinel" "masterName" "" .Values.redis -}}
{{- $_ = set $redis "sentinel" (dict "master_name" .Values.redis.sentinel.masterName "addrs" .Values.redis.sentinel.addrs "db" (int (default 0 .Values.redis.sentinel.db))) -}}
{{- else -}}
{{- $_ = set $redis "url" (include "vllm-responder.redisURL" .) -}}
{{- end -}}
{{- $_ = set $redis "key_prefix" .Values.redis.keyPrefix -}}
{{- $_ = set $c "redis" $redis -}}
{{- range (include "vllm-responder.secretsInUse" . | fromYamlArray) -}}
{{- if .section -}}
{{- $section := default dict (get $c .section) -}}
{{- $_ = set $section .configKey (printf "/etc/vllm-responder/secrets/%s" .file) -}}
{{- $_ = set $c .section $section -}}
{{- end -}}
{{- end -}}
{{- $hooks := list -}}
{{- range $i, $h := (default list (get $c "outbound_webhooks")) -}}
{{- $h = deepCopy $h -}}
{{- if hasKey (default dict $.Values.outboundWebhookSecrets) (toString $h.name) -}}
{{- $_ = set $h "secret_file" (printf "/etc/vllm-responder/secrets/webhook-%s" $h.name) -}}
{{- else if not (or $h.secret $h.secret_file) -}}
{{- fail (printf "config.outbound_webhooks[%d] (%s): its signing secret: set outboundWebhookSecrets.%s: {existingSecret: ..., key: ...}" $i (toString $h.name) (toString $h.name)) -}}
{{- end -}}
{{- $hooks = append $hooks $h -}}
{{- end -}}
{{- if $hooks -}}
{{- $_ = set $c "outbound_webhooks" $hooks -}}
{{- end -}}
{{- if or .Values.playbooks.files .Values.playbooks.existingConfigMap -}}
{{- $pb := default dict (get $c "playbooks") -}}
{{- $_ = set $pb "dir" "/etc/vllm-responder/playbooks" -}}
{{- $_ = set $c "playbooks" $pb -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}
