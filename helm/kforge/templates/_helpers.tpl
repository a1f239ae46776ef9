{{/* Names: <release>-kforge, or the release name when it already contains "kforge". */}}
{{- define "kforge.fullname" -}}
{{- if contains "kforge" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-kforge" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of a component; call with (dict "root" $ "component" "coordinator"). */}}
{{- define "kforge.selectorLabels" -}}
app.kubernetes.io/name: kforge
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "kforge.labels" -}}
{{ include "kforge.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The image of a component; call with (dict "root" $ "component" "worker"). */}}
{{- define "kforge.image" -}}
{{- $img := .root.Values.image -}}
{{- printf "%s%s:%s" $img.registry (get $img .component) (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{- define "kforge.coordinatorAddress" -}}
{{- printf "%s-coordinator:%d" (include "kforge.fullname" .) (int .Values.coordinator.grpcPort) -}}
{{- end -}}

{{/* The Secret and key holding the database URL: the operator's, or the chart's own. */}}
{{- define "kforge.databaseSecret" -}}
{{- if .Values.postgresql.enabled -}}
{{- printf "%s-database" (include "kforge.fullname" .) -}}
{{- else -}}
{{- required "database.existingSecret: name the Secret that holds the PostgreSQL URL (or set postgresql.enabled)" .Values.database.existingSecret -}}
{{- end -}}
{{- end -}}

{{/* The database URL as a mounted file (--database_url_file), never an env value. */}}
{{- define "kforge.databaseEnv" -}}
- name: KFORGE_DATABASE_URL_FILE
  value: /var/run/secrets/kforge/database/url
{{- end -}}

{{- define "kforge.databaseMount" -}}
- name: database
  mountPath: /var/run/secrets/kforge/database
  readOnly: true
{{- end -}}

{{- define "kforge.databaseVolume" -}}
- name: database
  secret:
    secretName: {{ include "kforge.databaseSecret" . }}
    defaultMode: 0440
    items:
      - key: {{ if .Values.postgresql.enabled }}url{{ else }}{{ .Values.database.urlKey }}{{ end }}
        path: url
{{- end -}}

{{/* Addresses every service binds; call with (dict "grpc" PORT "metrics" PORT). */}}
{{- define "kforge.listenEnv" -}}
- name: KFORGE_GRPC_ADDRESS
  value: "0.0.0.0:{{ .grpc }}"
- name: KFORGE_METRICS_ADDRESS
  value: "0.0.0.0:{{ .metrics }}"
{{- end -}}

{{- define "kforge.ports" -}}
- name: grpc
  containerPort: {{ .grpc }}
  protocol: TCP
- name: metrics
  containerPort: {{ .metrics }}
  protocol: TCP
{{- end -}}

{{/* gRPC health (grpc.health.v1) on the port the service serves; call with
     (dict "root" $ "port" PORT "component" "coordinator"|"gateway"|"worker" "cli" PATH).
     Kubernetes' own gRPC probe speaks no TLS: with TLS the probe runs `kforge health` in the
     container, verifying the certificate against the CA and the name <fullname>-<component>. */}}
{{- define "kforge.probes" -}}
{{- $probe := printf "grpc: {port: %v}" .port -}}
{{- if not .root.Values.tls.insecure -}}
{{- $probe = printf "exec: {command: [%s, --tls_server_name=%s-%s, health, \"127.0.0.1:%v\"]}" .cli (include "kforge.fullname" .root) .component .port -}}
{{- end -}}
startupProbe:
  {{ $probe }}
  periodSeconds: 5
  failureThreshold: 60
  timeoutSeconds: 5
readinessProbe:
  {{ $probe }}
  periodSeconds: 5
  failureThreshold: 2
  timeoutSeconds: 5
livenessProbe:
  {{ $probe }}
  periodSeconds: 10
  failureThreshold: 6
  timeoutSeconds: 5
{{- end -}}

{{/* The Secrets the pods mount: the operator's, or the chart's own (templates/secrets.yaml). */}}
{{- define "kforge.tlsSecret" -}}
{{- default (printf "%s-tls" (include "kforge.fullname" .)) .Values.tls.existingSecret -}}
{{- end -}}
{{- define "kforge.authSecret" -}}
{{- default (printf "%s-auth" (include "kforge.fullname" .)) .Values.auth.existingSecret -}}
{{- end -}}
{{- define "kforge.workerTokenSecret" -}}
{{- default (printf "%s-worker-token" (include "kforge.fullname" .)) .Values.auth.workerTokenSecret -}}
{{- end -}}

{{/* The workers' token as a file: the workers call with it, the coordinators store it with the
     worker role at startup (--bootstrap_worker_token_file). Mode 0440: the coordinator reads
     it as group 65534 (fsGroup), the worker as root. */}}
{{- define "kforge.workerTokenVolume" -}}
- name: worker-token
  secret:
    secretName: {{ include "kforge.workerTokenSecret" . }}
    defaultMode: 0440
    items:
      - {key: worker-token, path: worker-token}
{{- end -}}

{{/* TLS of every gRPC hop (common/tls.h): the certificate, key and CA as mounted files, or
     plaintext only when tls.insecure says so; call with $. */}}
{{- define "kforge.tlsEnv" -}}
{{- if .Values.tls.insecure -}}
- name: KFORGE_INSECURE
  value: "true"
{{- else -}}
- name: KFORGE_TLS_CERT_FILE
  value: /var/run/secrets/kforge/tls/tls.crt
- name: KFORGE_TLS_KEY_FILE
  value: /var/run/secrets/kforge/tls/tls.key
- name: KFORGE_TLS_CA_FILE
  value: /var/run/secrets/kforge/tls/ca.crt
{{- end }}
{{- end -}}

{{- define "kforge.tlsMount" -}}
{{- if not .Values.tls.insecure -}}
- name: tls
  mountPath: /var/run/secrets/kforge/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "kforge.tlsVolume" -}}
{{- if not .Values.tls.insecure -}}
- name: tls
  secret:
    secretName: {{ include "kforge.tlsSecret" . }}
    defaultMode: 0440
    items:
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
      - {key: ca.crt, path: ca.crt}
{{- end }}
{{- end -}}

{{/* The pools with workerDefaults filled in, as JSON {"pools": [...]}: a pool's own keys
     replace the defaults' (whole values, so a pool's 0 or false is kept). */}}
{{- define "kforge.pools" -}}
{{- $pools := list -}}
{{- $seen := dict -}}
{{- range $p := .Values.workerPools -}}
{{- if hasKey $seen $p.name -}}
{{- fail (printf "workerPools: the name %q is used twice" $p.name) -}}
{{- end -}}
{{- $_ := set $seen $p.name true -}}
{{- $pool := deepCopy $.Values.workerDefaults -}}
{{- range $k, $v := $p -}}
{{- $_ := set $pool $k $v -}}
{{- end -}}
{{- if le (int $pool.terminationGracePeriodSeconds) (int $pool.evaluationLimitSeconds) -}}
{{- fail (printf "workerPools %s: terminationGracePeriodSeconds (%v) must exceed evaluationLimitSeconds (%v), or a drain kills a running evaluation" $pool.name $pool.terminationGracePeriodSeconds $pool.evaluationLimitSeconds) -}}
{{- end -}}
{{- if gt (int $pool.minReplicas) (int $pool.maxReplicas) -}}
{{- fail (printf "workerPools %s: minReplicas (%v) is above maxReplicas (%v)" $pool.name $pool.minReplicas $pool.maxReplicas) -}}
{{- end -}}
{{- $pools = append $pools $pool -}}
{{- end -}}
{{- dict "pools" $pools | toJson -}}
{{- end -}}

{{/* The autoscaler's query for a pool: the deepest queue any coordinator reports (each
     exports the same database-wide gauge), 0 when none does. */}}
{{- define "kforge.queueQuery" -}}
{{- $types := list .gpuType -}}
{{- if .scaleOnAnyQueue }}{{ $types = append $types "any" }}{{ end -}}
sum(max by (gpu_type) (kforge_queue_depth{gpu_type=~"{{ join "|" $types }}"})) or vector(0)
{{- end -}}

{{/* Every pool's GPU type, comma-separated (the coordinator's --gpu_pools): pools scaled to
     zero have no registered worker, and batches for their type must still be accepted. */}}
{{- define "kforge.gpuTypes" -}}
{{- $types := list -}}
{{- range $p := (include "kforge.pools" . | fromJson).pools -}}
{{- $types = append $types $p.gpuType -}}
{{- end -}}
{{- $types | uniq | join "," -}}
{{- end -}}
