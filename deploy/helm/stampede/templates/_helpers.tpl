{{/*
Names are fixed, as in compose.yaml (postgres, redis-cache, redis-lock-N,
jaeger, prometheus, grafana, loadgen, api): the compose demo's Grafana
datasources and Jaeger configuration are used as they are. Install one
release per namespace.
*/}}

{{/* Labels of every object of a component (the component's name as argument list: root, name). */}}
{{- define "stampede.labels" -}}
{{ include "stampede.selector" . }}
app.kubernetes.io/part-of: stampede
app.kubernetes.io/managed-by: {{ (index . 0).Release.Service }}
helm.sh/chart: {{ printf "%s-%s" (index . 0).Chart.Name (index . 0).Chart.Version }}
{{- end }}

{{/* The labels a component's Service and controller select its pods by. */}}
{{- define "stampede.selector" -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
{{- end }}

{{/* The project's image (api and loadgen). */}}
{{- define "stampede.image" -}}
image: {{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
{{- end }}

{{/* A pod that runs as uid/gid (argument list: uid, gid), never as root. */}}
{{- define "stampede.podSecurity" -}}
runAsNonRoot: true
runAsUser: {{ index . 0 }}
runAsGroup: {{ index . 1 }}
fsGroup: {{ index . 1 }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* A container without privileges; the argument says whether its root filesystem is read-only. */}}
{{- define "stampede.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: {{ . }}
capabilities:
  drop: [ALL]
{{- end }}

{{/* The cache servers' pod names in cluster mode: redis-cache-0 .. */}}
{{- define "stampede.cacheNodes" -}}
{{- $n := int (mul .Values.cache.cluster.masters (add 1 .Values.cache.cluster.replicasPerMaster)) -}}
{{- range $i := until $n }}
- {{ printf "redis-cache-%d.redis-cache:6379" $i }}
{{- end }}
{{- end }}

{{/* REDIS_CLUSTER_URL: every node of the cache's cluster as a seed. */}}
{{- define "stampede.cacheClusterURL" -}}
{{- $nodes := include "stampede.cacheNodes" . | fromYamlArray -}}
{{- $extra := list -}}
{{- range rest $nodes }}{{ $extra = append $extra (printf "addr=%s" .) }}{{ end -}}
{{ printf "redis://%s?%s" (first $nodes) (join "&" $extra) }}
{{- end }}

{{/* LOCK_REDIS_URLS: one URL per lock master, comma-separated. */}}
{{- define "stampede.lockURLs" -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.lock.masters) }}{{ $urls = append $urls (printf "redis://redis-lock-%d:6379" (add1 $i)) }}{{ end -}}
{{ join "," $urls }}
{{- end }}

{{/* The API instances' host:port, one a line as a YAML list. */}}
{{- define "stampede.apiTargets" -}}
{{- range $i := until (int .Values.api.replicas) }}
- {{ printf "api-%d.api-headless:8080" $i }}
{{- end }}
{{- end }}

{{/*
What every api process is given, seed included: compose.yaml's x-api-env
with the cache on a cluster when cache.mode is cluster.
*/}}
{{- define "stampede.apiEnv" -}}
- name: DATABASE_URL
  value: postgres://postgres@postgres:5432/stampede?sslmode=disable
{{- if eq .Values.cache.mode "cluster" }}
- name: REDIS_CLUSTER_URL
  value: {{ include "stampede.cacheClusterURL" . | quote }}
{{- else }}
- name: REDIS_URL
  value: redis://redis-cache:6379
{{- end }}
- name: LOCK_REDIS_URLS
  value: {{ include "stampede.lockURLs" . | quote }}
- name: ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: stampede-admin
      key: token
- name: LOG_LEVEL
  value: {{ .Values.api.logLevel | quote }}
- name: LOG_FORMAT
  value: json
- name: MIGRATE
  value: "false"
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: http://jaeger:4318
- name: TRACE_SAMPLE
  value: {{ .Values.api.traceSample | quote }}
{{- end }}

{{/* An init container that waits until Postgres accepts connections. */}}
{{- define "stampede.waitPostgres" -}}
- name: wait-postgres
  image: {{ .Values.images.postgres | quote }}
  command: ["sh", "-c", "until pg_isready -q -h postgres -p 5432 -U postgres -d stampede; do sleep 1; done"]
  securityContext:
    {{- include "stampede.containerSecurity" true | nindent 4 }}
  resources:
    requests: {cpu: 10m, memory: 16Mi}
    limits: {memory: 64Mi}
{{- end }}

{{/* Checks on the values: a clear error instead of a broken release. */}}
{{- define "stampede.validate" -}}
{{- if not (has .Values.cache.mode (list "single" "cluster")) }}{{ fail (printf "cache.mode is %q: want single or cluster" .Values.cache.mode) }}{{ end }}
{{- if lt (int .Values.api.replicas) 1 }}{{ fail "api.replicas must be at least 1" }}{{ end }}
{{- if lt (int .Values.lock.masters) 1 }}{{ fail "lock.masters must be at least 1" }}{{ end }}
{{- if and (eq .Values.cache.mode "cluster") (lt (int .Values.cache.cluster.masters) 3) }}{{ fail "cache.cluster.masters must be at least 3 (redis-cli --cluster create)" }}{{ end }}
{{- end }}
