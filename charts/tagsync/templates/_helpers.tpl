{{/* Names and labels shared by the templates. */}}

{{- define "tagsync.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tagsync.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tagsync.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tagsync.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tagsync.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tagsync.labels" -}}
helm.sh/chart: {{ include "tagsync.chart" . }}
{{ include "tagsync.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tagsync
{{- end }}

{{- define "tagsync.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tagsync.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tagsync.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
tagsync.labelPrefix is the NodeTagSync's labelPrefix; "" is a valid prefix
(label key = tag name), so it is read with hasKey, not default. Unset, it
is the provider's default: aws.tags with provider aws, else azure.tags.
*/}}
{{- define "tagsync.labelPrefix" -}}
{{- if hasKey .Values.nodeTagSync.spec "labelPrefix" }}
{{- .Values.nodeTagSync.spec.labelPrefix }}
{{- else if eq (toString .Values.nodeTagSync.spec.provider) "aws" }}
{{- "aws.tags" }}
{{- else }}
{{- "azure.tags" }}
{{- end }}
{{- end }}

{{/* tagsync.guardedPrefixes is the JSON list of label prefixes the admission policy guards. */}}
{{- define "tagsync.guardedPrefixes" -}}
{{- $prefixes := list (include "tagsync.labelPrefix" .) }}
{{- range .Values.admissionPolicy.extraLabelPrefixes }}
{{- $prefixes = append $prefixes . }}
{{- end }}
{{- $prefixes | uniq | toJson }}
{{- end }}

{{/*
tagsync.controllers is the --controllers value: the one place that decides
which controllers run. Everything that depends on a controller (its RBAC,
its objects, its flags) asks tagsync.runs instead of reading the values
again.
*/}}
{{- define "tagsync.controllers" -}}
{{- $c := list }}
{{- if .Values.nodeTagSync.enabled }}
{{- $c = append $c "nodetags" }}
{{- end }}
{{- if .Values.metadata.enabled }}
{{- $c = append $c "metadata" }}
{{- end }}
{{- if .Values.openshift.enabled }}
{{- $c = append $c "infratags" }}
{{- end }}
{{- if .Values.labelSync.enabled }}
{{- $c = append $c "labelsync" }}
{{- end }}
{{- if .Values.workloadTags.enabled }}
{{- $c = append $c "workloadtags" }}
{{- end }}
{{- join "," $c }}
{{- end }}

{{/*
tagsync.namespaces is the --namespaces value ("": every namespace). The
flag confines the cache of every controller in the process, so it comes
from the namespaced controllers that run (metadata.namespaces,
labelSync.namespaces); tagsync.validate refuses two running controllers
that ask for different namespaces.
*/}}
{{- define "tagsync.namespaces" -}}
{{- $ns := list }}
{{- if include "tagsync.runs" (dict "root" . "name" "metadata") }}
{{- $ns = .Values.metadata.namespaces }}
{{- end }}
{{- if and (not $ns) (include "tagsync.runs" (dict "root" . "name" "labelsync")) }}
{{- $ns = .Values.labelSync.namespaces }}
{{- end }}
{{- join "," $ns }}
{{- end }}

{{/*
tagsync.runs is "true" when the controller named by .name is in
tagsync.controllers, else "": (include "tagsync.runs" (dict "root" $ "name" "metadata")).
*/}}
{{- define "tagsync.runs" -}}
{{- if has .name (splitList "," (include "tagsync.controllers" .root)) }}true{{ end }}
{{- end }}

{{/*
tagsync.auditLogFile is "true" when metadata.auditLog is a file path (not
stderr or none): the file needs a writable volume (the root filesystem is
read-only).
*/}}
{{- define "tagsync.auditLogFile" -}}
{{- if not (has .Values.metadata.auditLog (list "stderr" "none")) }}true{{ end }}
{{- end }}

{{/*
tagsync.usesAWS is "true" when something in the process may call AWS: the
metadata controller, the workload tags controller (its policies name their
cloud), the node sync with nodeTagSync.spec.provider aws, or the SQS event
source. They share the AWS settings (aws.*): the static keys' environment
and --aws-region / --aws-endpoint.
*/}}
{{- define "tagsync.usesAWS" -}}
{{- $awsNodes := and (include "tagsync.runs" (dict "root" . "name" "nodetags")) (eq (toString .Values.nodeTagSync.spec.provider) "aws") }}
{{- $workloads := include "tagsync.runs" (dict "root" . "name" "workloadtags") }}
{{- if or (include "tagsync.runs" (dict "root" . "name" "metadata")) $workloads $awsNodes .Values.events.sqs.queueURL }}true{{ end }}
{{- end }}

{{/* tagsync.events is "true" when an event source is on: the webhook or the SQS queue. */}}
{{- define "tagsync.events" -}}
{{- if or .Values.events.webhook.enabled .Values.events.sqs.queueURL }}true{{ end }}
{{- end }}

{{/* Where the webhook's certificate and shared secret are mounted. */}}
{{- define "tagsync.eventsWebhookCertDir" -}}
/etc/tagsync/events-webhook-tls
{{- end }}
{{- define "tagsync.eventsWebhookSecretDir" -}}
/etc/tagsync/events-webhook-secret
{{- end }}
{{/* tagsync.eventsPublicURL is the webhook's public address to probe: events.webhook.publicURL, else the Ingress's. */}}
{{- define "tagsync.eventsPublicURL" -}}
{{- $w := .Values.events.webhook }}
{{- if $w.publicURL }}{{ $w.publicURL }}
{{- else if and $w.ingress.enabled $w.ingress.host }}{{ if $w.ingress.tls }}https{{ else }}http{{ end }}://{{ $w.ingress.host }}/eventgrid
{{- end }}
{{- end }}
{{- define "tagsync.peerTokenDir" -}}
/var/run/secrets/tagsync.io/peer
{{- end }}

{{/*
tagsync.validate fails the render on settings that cannot work, saying what
to set. Called from the Deployment.
*/}}
{{- define "tagsync.validate" -}}
{{- $mode := .Values.azure.authMode }}
{{- if not (has $mode (list "workloadIdentity" "managedIdentity" "servicePrincipal" "default")) }}
{{- fail (printf "azure.authMode %q is not supported: use workloadIdentity, managedIdentity, servicePrincipal or default" $mode) }}
{{- end }}
{{- if eq $mode "managedIdentity" }}
{{- if not .Values.azure.clientID }}
{{- fail "azure.authMode managedIdentity needs azure.clientID: the client ID of the user-assigned identity attached to the node pool" }}
{{- end }}
{{- end }}
{{- if eq $mode "servicePrincipal" }}
{{- if or (not .Values.azure.clientID) (not .Values.azure.tenantID) (not .Values.azure.existingSecret) }}
{{- fail "azure.authMode servicePrincipal needs azure.clientID, azure.tenantID and azure.existingSecret (a Secret in the release namespace holding the client secret under azure.existingSecretKey)" }}
{{- end }}
{{- end }}
{{- if .Values.openshift.enabled }}
{{- if not .Values.metadata.enabled }}
{{- fail "openshift.enabled needs metadata.enabled: true: the OpenShift adapter only writes CloudMetadata and AzureMetadata/AWSMetadata objects, which the metadata controller applies" }}
{{- end }}
{{- with .Values.metadata.namespaces }}
{{- if not (has $.Release.Namespace .) }}
{{- fail (printf "openshift.enabled with metadata.namespaces %v: add the release namespace %s, where the OpenShift adapter writes its objects (or leave metadata.namespaces empty)" . $.Release.Namespace) }}
{{- end }}
{{- end }}
{{- end }}
{{- if not (include "tagsync.controllers" .) }}
{{- fail "nodeTagSync.enabled, metadata.enabled and labelSync.enabled are all false: enable at least one controller" }}
{{- end }}
{{- if and .Values.metadata.enabled .Values.labelSync.enabled }}
{{- if ne (.Values.metadata.namespaces | default list | sortAlpha | join ",") (.Values.labelSync.namespaces | default list | sortAlpha | join ",") }}
{{- fail (printf "metadata.namespaces %v and labelSync.namespaces %v differ: both become the one --namespaces flag, which confines every controller of the process; give both the same list (or leave both empty)" (.Values.metadata.namespaces | default list) (.Values.labelSync.namespaces | default list)) }}
{{- end }}
{{- end }}
{{- if and .Values.labelSync.enabled .Values.labelSync.secrets.clusterWide .Values.labelSync.secrets.namespaces }}
{{- fail (printf "labelSync.secrets.clusterWide and labelSync.secrets.namespaces %v are both set: choose Roles in those namespaces or one ClusterRole over every namespace" .Values.labelSync.secrets.namespaces) }}
{{- end }}
{{- if and .Values.labelSync.enabled .Values.labelSync.namespaces (or .Values.labelSync.secrets.clusterWide .Values.labelSync.secrets.namespaces) }}
{{- fail (printf "labelSync.secrets is set while labelSync.namespaces %v is: the Roles in labelSync.namespaces already grant get on secrets there, and the controller serves no other namespace; leave labelSync.secrets at its defaults" .Values.labelSync.namespaces) }}
{{- end }}
{{- if include "tagsync.auditLogFile" . }}
{{- if not (isAbs .Values.metadata.auditLog) }}
{{- fail (printf "metadata.auditLog %q: give stderr, none, or an absolute file path (e.g. /var/log/tagsync/audit.log)" .Values.metadata.auditLog) }}
{{- end }}
{{- if eq (dir .Values.metadata.auditLog) "/" }}
{{- fail (printf "metadata.auditLog %q: put the file in a directory of its own (e.g. /var/log/tagsync/audit.log); the chart mounts a writable volume there" .Values.metadata.auditLog) }}
{{- end }}
{{- end }}
{{- if and (include "tagsync.runs" (dict "root" . "name" "nodetags")) (eq (toString .Values.nodeTagSync.spec.provider) "aws") (eq $mode "workloadIdentity") (not .Values.azure.clientID) }}
{{- fail "nodeTagSync.spec.provider aws with azure.authMode workloadIdentity and no azure.clientID: the controller would not start; on a cluster without Azure set azure.authMode=default (docs/install-eks.md)" }}
{{- end }}
{{- include "tagsync.validateEvents" . }}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicas > 1 needs leaderElection.enabled: true, or several replicas would sync at once" }}
{{- end }}
{{- end }}

{{/* tagsync.validateEvents fails the render on event settings that cannot work. */}}
{{- define "tagsync.validateEvents" -}}
{{- $hook := .Values.events.webhook }}
{{- if and (include "tagsync.events" .) (not (or (include "tagsync.runs" (dict "root" . "name" "nodetags")) (include "tagsync.runs" (dict "root" . "name" "metadata")))) }}
{{- fail "events.webhook.enabled or events.sqs.queueURL is set, but neither nodeTagSync.enabled nor metadata.enabled: no controller would act on the events" }}
{{- end }}
{{- if $hook.enabled }}
{{- $entra := or $hook.entra.tenantID $hook.entra.audience }}
{{- if not (or $hook.sharedSecret.existingSecret $entra) }}
{{- fail "events.webhook.enabled needs a way to authenticate Event Grid: events.webhook.sharedSecret.existingSecret (a Secret holding the key deliveries carry in the X-Tagsync-Key header or as ?key=...) and/or events.webhook.entra.tenantID with events.webhook.entra.audience (Entra ID-protected delivery)" }}
{{- end }}
{{- if and $entra (not (and $hook.entra.tenantID $hook.entra.audience)) }}
{{- fail "events.webhook.entra needs both tenantID and audience (the Entra application ID or application ID URI the event subscription names)" }}
{{- end }}
{{- if and $hook.entra.allowedCallers (not $entra) }}
{{- fail "events.webhook.entra.allowedCallers needs events.webhook.entra.tenantID and audience: the callers are checked in Entra ID tokens" }}
{{- end }}
{{- if has (int $hook.port) (list (int .Values.metrics.port) (int .Values.health.port)) }}
{{- fail (printf "events.webhook.port %d is already the metrics or health port: give the webhook a port of its own" (int $hook.port)) }}
{{- end }}
{{- if and $hook.ingress.enabled (not $hook.ingress.host) }}
{{- fail "events.webhook.ingress.enabled needs events.webhook.ingress.host: the host name in the Event Grid subscription's endpoint URL" }}
{{- end }}
{{- else if or $hook.ingress.enabled $hook.certSecret $hook.sharedSecret.existingSecret $hook.entra.tenantID $hook.entra.audience $hook.entra.allowedCallers }}
{{- fail "events.webhook settings are set but events.webhook.enabled is false: set events.webhook.enabled=true (or leave the webhook's values at their defaults)" }}
{{- end }}
{{- end }}

{{/* tagsync.metricsPortName names the metrics port by its scheme. */}}
{{- define "tagsync.metricsPortName" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/* tagsync.metricsCertDir is where metrics.certSecret is mounted. */}}
{{- define "tagsync.metricsCertDir" -}}
/etc/tagsync/metrics-certs
{{- end }}

{{/* tagsync.args are the `tagsync run` flags. */}}
{{- define "tagsync.args" -}}
- run
- --controllers={{ include "tagsync.controllers" . }}
- --metrics-bind-address=:{{ .Values.metrics.port }}
- --metrics-secure={{ .Values.metrics.secure }}
{{- if and .Values.metrics.secure .Values.metrics.certSecret }}
- --metrics-cert-dir={{ include "tagsync.metricsCertDir" . }}
{{- end }}
- --health-probe-bind-address=:{{ .Values.health.port }}
- --leader-elect={{ .Values.leaderElection.enabled }}
- --memory-limit={{ .Values.goMemoryLimit }}
{{- if .Values.leaderElection.enabled }}
- --leader-election-namespace={{ .Release.Namespace }}
- --leader-election-id={{ .Values.leaderElection.leaseName }}
- --lease-duration={{ .Values.leaderElection.leaseDuration }}
- --renew-deadline={{ .Values.leaderElection.renewDeadline }}
- --retry-period={{ .Values.leaderElection.retryPeriod }}
{{- end }}
{{- $mode := .Values.azure.authMode }}
{{- if eq $mode "workloadIdentity" }}
- --azure-auth-mode=workload-identity
{{- else if eq $mode "managedIdentity" }}
- --azure-auth-mode=managed-identity
{{- else if eq $mode "default" }}
- --azure-auth-mode=default
{{- else }}
- --azure-auth-mode=client-secret
- --azure-client-secret-file=/etc/tagsync/azure/{{ .Values.azure.existingSecretKey }}
{{- end }}
{{- with .Values.azure.clientID }}
- --azure-client-id={{ . }}
{{- end }}
{{- with .Values.azure.tenantID }}
- --azure-tenant-id={{ . }}
{{- end }}
{{- with .Values.azure.subscriptionID }}
- --azure-subscription={{ . }}
{{- end }}
{{- with .Values.azure.authorityHost }}
- --azure-authority-host={{ . }}
{{- end }}
{{- with .Values.azure.armEndpoint }}
- --azure-arm-endpoint={{ . }}
{{- end }}
{{- with .Values.azure.armAudience }}
- --azure-arm-audience={{ . }}
{{- end }}
- --azure-write-method={{ .Values.azure.writeMethod }}
{{- if .Values.azure.readQPS }}
- --azure-read-qps={{ .Values.azure.readQPS }}
{{- end }}
{{- if .Values.azure.writeQPS }}
- --azure-write-qps={{ .Values.azure.writeQPS }}
{{- end }}
{{- if include "tagsync.runs" (dict "root" . "name" "metadata") }}
- --audit-log={{ .Values.metadata.auditLog }}
{{- if include "tagsync.auditLogFile" . }}
- --audit-log-max-size={{ .Values.metadata.auditLogMaxSize }}
{{- end }}
{{- if .Values.metadata.auditFailOpen }}
- --audit-fail-open
{{- end }}
{{- end }}
{{- if include "tagsync.usesAWS" . }}
{{- with .Values.aws.region }}
- --aws-region={{ . }}
{{- end }}
{{- with .Values.aws.endpoint }}
- --aws-endpoint={{ . }}
{{- end }}
{{- end }}
{{- include "tagsync.eventsArgs" . }}
{{- if include "tagsync.runs" (dict "root" . "name" "infratags") }}
- --openshift-namespace={{ .Release.Namespace }}
{{- with .Values.openshift.azureOwnedTag }}
- {{ printf "--openshift-azure-owned-tag=%s" . | quote }}
{{- end }}
{{- with .Values.openshift.awsOwnedTag }}
- {{ printf "--openshift-aws-owned-tag=%s" . | quote }}
{{- end }}
{{- end }}
{{- with include "tagsync.namespaces" . }}
- --namespaces={{ . }}
{{- end }}
- --zap-encoder=json
- --zap-log-level={{ .Values.logLevel }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
tagsync.eventsArgs are the --events-* flags, only when an event source is on
(docs/events.md).
*/}}
{{- define "tagsync.eventsArgs" -}}
{{- if include "tagsync.events" . }}
{{- $e := .Values.events }}
- --events-resync-interval={{ $e.resyncInterval }}
- --events-queue-size={{ int $e.queueSize }}
- --events-max-age={{ $e.maxAge }}
- --events-silent-after={{ $e.silentAfter }}
{{- with $e.heartbeat.resources }}
- --events-heartbeat={{ join "," . }}
- --events-heartbeat-interval={{ $e.heartbeat.interval }}
{{- end }}
{{- if $e.webhook.enabled }}
- --shutdown-delay=5s
- --events-webhook-bind-address=:{{ int $e.webhook.port }}
{{- if $e.webhook.certSecret }}
- --events-webhook-cert-dir={{ include "tagsync.eventsWebhookCertDir" . }}
{{- end }}
{{- with $e.webhook.sharedSecret.existingSecret }}
- --events-webhook-secret-file={{ include "tagsync.eventsWebhookSecretDir" $ }}/{{ $e.webhook.sharedSecret.existingSecretKey }}
{{- end }}
{{- with $e.webhook.entra.tenantID }}
- --events-webhook-entra-tenant-id={{ . }}
{{- end }}
{{- with $e.webhook.entra.audience }}
- {{ printf "--events-webhook-entra-audience=%s" . | quote }}
{{- end }}
{{- with $e.webhook.entra.authority }}
- --events-webhook-entra-authority={{ . }}
{{- end }}
{{- with $e.webhook.entra.allowedCallers }}
- --events-webhook-entra-allowed-callers={{ join "," . }}
{{- end }}
{{- with include "tagsync.eventsPublicURL" . }}
- --events-webhook-public-url={{ . }}
- --events-webhook-probe-interval={{ $e.webhook.probeInterval }}
{{- end }}
{{- if .Values.leaderElection.enabled }}
- --events-webhook-peer-token-file={{ include "tagsync.peerTokenDir" . }}/token
{{- end }}
{{- end }}
{{- with $e.sqs.queueURL }}
- --events-sqs-queue-url={{ . }}
{{- end }}
{{- with $e.sqs.region }}
- --events-sqs-region={{ . }}
{{- end }}
{{- with $e.sqs.maxHold }}
- --events-sqs-max-hold={{ . }}
{{- end }}
{{- with $e.sqs.attributionWait }}
- --events-sqs-attribution-wait={{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The pod's and the container's securityContext: the values' podSecurityContext
and securityContext, without runAsUser, runAsGroup and fsGroup when
fixedIDs is false (OpenShift's restricted-v2 SCC assigns them from the
namespace's range and rejects any other).
*/}}
{{- define "tagsync.podSecurityContext" -}}
{{- $c := .Values.podSecurityContext | default dict }}
{{- if not .Values.fixedIDs }}
{{- $c = omit $c "runAsUser" "runAsGroup" "fsGroup" }}
{{- end }}
{{- toYaml $c }}
{{- end }}

{{- define "tagsync.securityContext" -}}
{{- $c := .Values.securityContext | default dict }}
{{- if not .Values.fixedIDs }}
{{- $c = omit $c "runAsUser" "runAsGroup" }}
{{- end }}
{{- toYaml $c }}
{{- end }}

{{/*
tagsync.admissionPolicyAPI: non-empty when the cluster serves
ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1 (GA in
Kubernetes 1.30; OpenShift 4.14 to 4.16 run 1.27 to 1.29 and lack it). Against
a cluster (helm install/upgrade) Helm lists the served kinds, so the kind
decides; `helm template` without a cluster lists group versions only (no
kinds), and then the Kubernetes version (--kube-version) decides.
*/}}
{{- define "tagsync.admissionPolicyAPI" -}}
{{- $api := .Capabilities.APIVersions }}
{{- if $api.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" }}true
{{- else if and (not ($api.Has "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration")) (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version) }}true
{{- end }}
{{- end }}

{{/*
tagsync.hookMeta: the metadata of a hook object of the chart's objects Job
(dict: name, hooks, weight, root): deleted before it is made again and once
its hook has succeeded; a failed Job stays for its logs.
*/}}
{{- define "tagsync.hookMeta" -}}
name: {{ .name }}
labels:
  {{- include "tagsync.labels" .root | nindent 2 }}
  app.kubernetes.io/component: objects
annotations:
  helm.sh/hook: {{ .hooks }}
  helm.sh/hook-weight: {{ .weight | quote }}
  helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}

{{/*
tagsync.objectsJob: a hook Job running `tagsync <args>` as the objects
ServiceAccount (dict: root, name, serviceAccount, hooks, args), on the
manager's image, pull secrets, security context and node placement.
*/}}
{{- define "tagsync.objectsJob" -}}
{{- $root := .root }}
apiVersion: batch/v1
kind: Job
metadata:
  namespace: {{ $root.Release.Namespace }}
  {{- include "tagsync.hookMeta" (dict "name" .name "hooks" .hooks "weight" "0" "root" $root) | nindent 2 }}
spec:
  backoffLimit: 3
  activeDeadlineSeconds: 3600
  template:
    metadata:
      # Not the manager's selector labels: its Services and PodDisruptionBudget
      # must not count this Pod.
      labels:
        app.kubernetes.io/instance: {{ $root.Release.Name }}
        app.kubernetes.io/part-of: tagsync
        app.kubernetes.io/component: objects
      annotations:
        # A service mesh's sidecar would keep the Job's Pod from completing.
        sidecar.istio.io/inject: "false"
    spec:
      restartPolicy: Never
      serviceAccountName: {{ .serviceAccount }}
      automountServiceAccountToken: true
      enableServiceLinks: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- include "tagsync.podSecurityContext" $root | nindent 8 }}
      containers:
        - name: objects
          image: {{ include "tagsync.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          resources:
            requests:
              cpu: 10m
              memory: 32Mi
            limits:
              memory: 128Mi
          securityContext:
            {{- include "tagsync.securityContext" $root | nindent 12 }}
      {{- with $root.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
