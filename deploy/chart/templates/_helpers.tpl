{{/*
Labels of every object: kustomize's (deploy/kustomization.yaml's labels:
app.kubernetes.io/part-of) and Helm's standard ones. Pod templates and
selectors get neither, as in deploy/.
*/}}
{{- define "ate.labels" -}}
app.kubernetes.io/part-of: ate-orchestrator
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
{{- end }}

{{/*
The namespace of the processes and their objects: the release's, as
`helm install -n ate-system --create-namespace` expects; the chart renders
no Namespace (docs/install.md labels it for Pod Security).
*/}}
{{- define "ate.namespace" -}}
{{ .Release.Namespace }}
{{- end }}

{{/* The namespace of the leader election Leases and of the Roles granting them. */}}
{{- define "ate.leaseNamespace" -}}
{{ .Values.leaderElection.namespace | default .Release.Namespace }}
{{- end }}

{{/*
What every pod of the chart shares: podLabels and podAnnotations beside its
own labels (never in a selector, which is immutable), priorityClassName,
imagePullSecrets and podSecurityContext. Args: root, labels (the pod's own).
*/}}
{{- define "ate.podMetadata" -}}
labels:
  {{- toYaml (merge (deepCopy .labels) (deepCopy .root.Values.podLabels)) | nindent 2 }}
{{- with .root.Values.podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "ate.podSpec" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The image: repository@digest when a digest is set, else repository:tag (default appVersion). */}}
{{- define "ate.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
The ConfigMap's data: deploy/manager/config.env's settings, then extraConfig.
*/}}
{{- define "ate.configData" -}}
{{- $d := dict
  "TEMPORAL_ADDRESS" (toString .Values.temporal.address)
  "TEMPORAL_NAMESPACE" (toString .Values.temporal.namespace)
  "TEMPORAL_TASK_QUEUE" (toString .Values.temporal.taskQueue)
  "ATE_CLUSTER_NAME" (toString .Values.clusterName)
  "METRICS_BIND_ADDRESS" (printf ":%v" .Values.metrics.port)
  "METRICS_SECURE" (toString .Values.metrics.secure)
  "METRICS_CLUSTER_LABEL" (toString .Values.monitoring.clusterLabel)
  "HEALTH_PROBE_BIND_ADDRESS" (printf ":%v" .Values.healthProbe.port)
  "LOG_LEVEL" (toString .Values.logLevel)
  "LOG_FORMAT" (toString .Values.logFormat) -}}
{{- range $k, $v := .Values.extraConfig }}
{{- $_ := set $d $k (toString $v) }}
{{- end }}
{{- toJson $d -}}
{{- end }}

{{/*
The ConfigMap's name: ate-orchestrator-config-<hash>, the hash kustomize's
configMapGenerator computes (sigs.k8s.io/kustomize/api/hasher): the first 10
hex digits of the SHA-256 of {"data":...,"kind":"ConfigMap","name":""}
(the name is empty: kustomize looks it up as one field "metadata/name"),
with 0 1 3 a e mapped to g h k m t. A changed setting renames it and so rolls
both Deployments, as with kustomize.
*/}}
{{- define "ate.configName" -}}
{{- $data := include "ate.configData" . | fromJson -}}
{{- $h := dict "data" $data "kind" "ConfigMap" "name" "" | toJson | sha256sum | trunc 10 -}}
ate-orchestrator-config-{{ $h | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" }}
{{- end }}

{{/*
The objects of a file of files/ (copies of deploy/'s generated CRDs and
roles, kept by `make generate`), each with the chart's labels, the namespaced
ones in the namespace given. Args: root, file, namespace, annotations.
*/}}
{{- define "ate.fileObjects" -}}
{{- $root := .root -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" ($root.Files.Get .file) -1 }}
{{- $o := fromYaml $doc }}
{{- if and $o (hasKey $o "kind") }}
{{- $md := $o.metadata }}
{{- $_ := set $md "labels" (merge (include "ate.labels" $root | fromYaml) ($md.labels | default dict)) }}
{{- if hasKey $md "namespace" }}
{{- $_ := set $md "namespace" $.namespace }}
{{- end }}
{{- with $.annotations }}
{{- $_ := set $md "annotations" (merge (deepCopy .) ($md.annotations | default dict)) }}
{{- end }}
---
{{ toYaml $o }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The git ref of the runbooks the alerts link to: the release's tag (the
chart's appVersion, as the release's monitoring.yaml has it), main for a
chart from the tree (appVersion dev).
*/}}
{{- define "ate.runbookVersion" -}}
{{- if eq (toString .Chart.AppVersion) "dev" }}main{{ else }}{{ .Chart.AppVersion }}{{ end -}}
{{- end }}
