{{/* Chart name, truncated to the 63 characters of a label value. */}}
{{- define "stagehand.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the prefix of every object name. */}}
{{- define "stagehand.fullname" -}}
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

{{- define "stagehand.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "stagehand.labels" -}}
helm.sh/chart: {{ include "stagehand.chart" . }}
app.kubernetes.io/part-of: stagehand
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of the reconciler. */}}
{{- define "stagehand.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stagehand.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: reconciler
{{- end -}}

{{/* Selector labels of prbot. */}}
{{- define "stagehand.prbotSelectorLabels" -}}
app.kubernetes.io/name: {{ include "stagehand.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: prbot
{{- end -}}

{{- define "stagehand.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "stagehand.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "stagehand.prbotServiceAccountName" -}}
{{- printf "%s-prbot" (include "stagehand.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Lease the replicas compete for (internal/daemon.LeaseName; one release per namespace). */}}
{{- define "stagehand.leaseName" -}}stagehand-reconciler{{- end -}}

{{/* The image reference: repository:tag[@digest]. */}}
{{- define "stagehand.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Where credentials are mounted. */}}
{{- define "stagehand.secretsDir" -}}/etc/stagehand/secrets{{- end -}}
{{- define "stagehand.kubeconfigsDir" -}}/var/run/stagehand/kubeconfigs{{- end -}}
{{- define "stagehand.notificationsDir" -}}/var/run/stagehand/notifications{{- end -}}
{{- define "stagehand.cacheDir" -}}/var/cache/stagehand{{- end -}}

{{/*
reconciler.yaml: .Values.config with the chart's own fields filled in (credential file paths from
.Values.secrets, the cache directory, and the release namespace for locks and state). Keys the user
adds under config pass through unchanged, so the reconciler's strict parser rejects a misspelt key.
*/}}
{{- define "stagehand.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $dir := include "stagehand.secretsDir" . -}}
{{- $s := .Values.secrets -}}
{{- $src := default dict $c.source -}}
{{- $auth := default dict $src.auth -}}
{{- if not $auth.username -}}{{- $_ := unset $auth "username" -}}{{- end -}}
{{- if $s.gitToken.secretName -}}
{{- $_ := set $auth "tokenFile" (printf "%s/git-token/token" $dir) -}}
{{- end -}}
{{- if $s.gitSSH.secretName -}}
{{- $_ := set $auth "sshKeyFile" (printf "%s/git-ssh/identity" $dir) -}}
{{- $_ := set $auth "knownHostsFile" (printf "%s/git-ssh/known_hosts" $dir) -}}
{{- end -}}
{{- $app := dict -}}
{{- if $s.githubApp.secretName -}}
{{- $app = dict "appID" (int64 $s.githubApp.appID) "installationID" (int64 $s.githubApp.installationID) "privateKeyFile" (printf "%s/github-app/private-key.pem" $dir) -}}
{{- if $s.githubApp.useForGit -}}
{{- $_ := set $auth "githubApp" $app -}}
{{- end -}}
{{- end -}}
{{- if $auth -}}{{- $_ := set $src "auth" $auth -}}{{- else -}}{{- $_ := unset $src "auth" -}}{{- end -}}
{{- if $s.gitCA.secretName -}}
{{- $_ := set $src "caFile" (printf "%s/git-ca/ca.crt" $dir) -}}
{{- end -}}
{{- $verify := dict -}}
{{- if $s.gpgKeyring.secretName -}}
{{- $_ := set $verify "keyringFile" (printf "%s/gpg-keyring/keyring" $dir) -}}
{{- end -}}
{{- if $s.sshAllowedSigners.secretName -}}
{{- $_ := set $verify "allowedSignersFile" (printf "%s/ssh-allowed-signers/allowed_signers" $dir) -}}
{{- end -}}
{{- if $verify -}}
{{- $_ := set $verify "mode" "head" -}}
{{- $_ := set $src "verify" $verify -}}
{{- end -}}
{{- $_ := set $src "cacheDir" (include "stagehand.cacheDir" .) -}}
{{- $_ := set $c "source" $src -}}
{{- if not $c.environments -}}{{- $_ := set $c "environments" dict -}}{{- end -}}
{{- $gh := default dict $c.github -}}
{{- if $app -}}{{- $_ := set $gh "app" $app -}}{{- end -}}
{{- if $s.webhook.secretName -}}
{{- $_ := set $gh "webhookSecretFile" (printf "%s/webhook/secret" $dir) -}}
{{- end -}}
{{- $_ := set $c "github" $gh -}}
{{- $server := dict "listen" ":8080" -}}
{{- if $s.apiToken.secretName -}}
{{- $_ := set $server "apiTokenFile" (printf "%s/api-token/token" $dir) -}}
{{- end -}}
{{- $ui := deepCopy (default dict (default dict $c.server).ui) -}}
{{- if $s.uiOAuth.secretName -}}
{{- $oauth := default dict $ui.oauth -}}
{{- $_ := set $oauth "clientIDFile" (printf "%s/ui-oauth/client-id" $dir) -}}
{{- $_ := set $oauth "clientSecretFile" (printf "%s/ui-oauth/client-secret" $dir) -}}
{{- $_ := set $ui "oauth" $oauth -}}
{{- end -}}
{{- if $s.uiSession.secretName -}}
{{- $_ := set $ui "sessionKeyFile" (printf "%s/ui-session/key" $dir) -}}
{{- end -}}
{{- if $ui -}}{{- $_ := set $server "ui" $ui -}}{{- end -}}
{{- if $s.tokens.secretName -}}
{{- $_ := set $server "tokensFile" (printf "%s/tokens/tokens.yaml" $dir) -}}
{{- end -}}
{{- if .Values.rbac.kubernetesAuth -}}
{{- $_ := set $server "kubernetesAuth" true -}}
{{- end -}}
{{- with (default dict $c.server).kubernetesAudience -}}{{- $_ := set $server "kubernetesAudience" . -}}{{- end -}}
{{- with (default dict $c.server).kubernetesActsFor -}}
{{- if not $.Values.rbac.kubernetesAuth -}}
{{- fail "config.server.kubernetesActsFor needs rbac.kubernetesAuth: true (without it no Kubernetes user is accepted)" -}}
{{- end -}}
{{- $_ := set $server "kubernetesActsFor" . -}}
{{- end -}}
{{- $_ := set $c "server" $server -}}
{{- if $s.registry.secretName -}}
{{- $reg := default dict $c.registry -}}
{{- $_ := set $reg "dockerConfigFile" (printf "%s/registry/config.json" $dir) -}}
{{- $_ := set $c "registry" $reg -}}
{{- end -}}
{{- $locks := default dict $c.locks -}}
{{- $_ := set $locks "namespace" .Release.Namespace -}}
{{- $_ := set $c "locks" $locks -}}
{{- $_ := set $c "state" (dict "namespace" .Release.Namespace) -}}
{{- toYaml $c -}}
{{- end -}}

{{/*
Namespaces the reconciler deploys to in this cluster: every target without a kubeconfig, plus
rbac.extraNamespaces; sorted, without duplicates, as a JSON list.
*/}}
{{- define "stagehand.targetNamespaces" -}}
{{- $ns := list -}}
{{- range $env, $e := .Values.config.environments -}}
{{- range $t := $e.targets -}}
{{- if and $t.namespace (not (or $t.kubeconfig $t.kubeconfigSecret $t.clusterSecret)) -}}
{{- $ns = append $ns $t.namespace -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range .Values.rbac.extraNamespaces -}}
{{- $ns = append $ns . -}}
{{- end -}}
{{- $ns | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/*
The Secrets in the release namespace that describe target clusters (kubeconfigSecret, clusterSecret),
sorted, without duplicates, as a JSON list.
*/}}
{{- define "stagehand.clusterSecrets" -}}
{{- $names := list -}}
{{- range $env, $e := .Values.config.environments -}}
{{- range $t := $e.targets -}}
{{- if $t.kubeconfigSecret -}}{{- $names = append $names $t.kubeconfigSecret.name -}}{{- end -}}
{{- if $t.clusterSecret -}}{{- $names = append $names $t.clusterSecret -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $names | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/*
The projected volume that puts reconciler.yaml (or prbot.yaml) and every referenced Secret under
/etc/stagehand. Argument: (dict "root" $ "configMap" NAME "configKey" KEY).
*/}}
{{- define "stagehand.configVolume" -}}
{{- $ := .root -}}
{{- $s := $.Values.secrets -}}
- name: config
  projected:
    defaultMode: 0440
    sources:
      - configMap:
          name: {{ .configMap }}
          items:
            - key: {{ .configKey }}
              path: {{ .configKey }}
      {{- if $s.gitToken.secretName }}
      - secret:
          name: {{ $s.gitToken.secretName }}
          items:
            - key: {{ $s.gitToken.key }}
              path: secrets/git-token/token
      {{- end }}
      {{- if $s.gitCA.secretName }}
      - secret:
          name: {{ $s.gitCA.secretName }}
          items:
            - key: {{ $s.gitCA.key }}
              path: secrets/git-ca/ca.crt
      {{- end }}
      {{- if $s.gitSSH.secretName }}
      - secret:
          name: {{ $s.gitSSH.secretName }}
          items:
            - key: {{ $s.gitSSH.privateKeyKey }}
              path: secrets/git-ssh/identity
            - key: {{ $s.gitSSH.knownHostsKey }}
              path: secrets/git-ssh/known_hosts
      {{- end }}
      {{- if $s.githubApp.secretName }}
      - secret:
          name: {{ $s.githubApp.secretName }}
          items:
            - key: {{ $s.githubApp.key }}
              path: secrets/github-app/private-key.pem
      {{- end }}
      {{- if $s.webhook.secretName }}
      - secret:
          name: {{ $s.webhook.secretName }}
          items:
            - key: {{ $s.webhook.key }}
              path: secrets/webhook/secret
      {{- end }}
      {{- if $s.apiToken.secretName }}
      - secret:
          name: {{ $s.apiToken.secretName }}
          items:
            - key: {{ $s.apiToken.key }}
              path: secrets/api-token/token
      {{- end }}
      {{- if $s.uiOAuth.secretName }}
      - secret:
          name: {{ $s.uiOAuth.secretName }}
          items:
            - key: {{ $s.uiOAuth.clientIDKey }}
              path: secrets/ui-oauth/client-id
            - key: {{ $s.uiOAuth.clientSecretKey }}
              path: secrets/ui-oauth/client-secret
      {{- end }}
      {{- if $s.uiSession.secretName }}
      - secret:
          name: {{ $s.uiSession.secretName }}
          items:
            - key: {{ $s.uiSession.key }}
              path: secrets/ui-session/key
      {{- end }}
      {{- if $s.tokens.secretName }}
      - secret:
          name: {{ $s.tokens.secretName }}
          items:
            - key: {{ $s.tokens.key }}
              path: secrets/tokens/tokens.yaml
      {{- end }}
      {{- if $s.gpgKeyring.secretName }}
      - secret:
          name: {{ $s.gpgKeyring.secretName }}
          items:
            - key: {{ $s.gpgKeyring.key }}
              path: secrets/gpg-keyring/keyring
      {{- end }}
      {{- if $s.sshAllowedSigners.secretName }}
      - secret:
          name: {{ $s.sshAllowedSigners.secretName }}
          items:
            - key: {{ $s.sshAllowedSigners.key }}
              path: secrets/ssh-allowed-signers/allowed_signers
      {{- end }}
      {{- if $s.registry.secretName }}
      - secret:
          name: {{ $s.registry.secretName }}
          items:
            - key: {{ $s.registry.key }}
              path: secrets/registry/config.json
      {{- end }}
{{- end -}}

{{/*
What the reconciler does to workloads: read and patch the four kinds (never create or delete them),
and record an Event per patched workload. With config.registry.workloadCredentials (the default) it
also reads, one by name at a time, the ServiceAccounts and image pull Secrets its workloads pull with,
to resolve their images' digests with the same credentials; never a list or watch of Secrets. The
Secrets it may read are those named in rbac.pullSecrets; any Secret only with rbac.readAllSecrets.
*/}}
{{- define "stagehand.workloadRules" -}}
{{- if ne (toString (default dict .Values.config.registry).workloadCredentials) "false" }}
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["get"]
{{- if .Values.rbac.readAllSecrets }}
# rbac.readAllSecrets: every Secret of the namespace, one by name at a time.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- else if .Values.rbac.pullSecrets }}
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: {{ .Values.rbac.pullSecrets | uniq | sortAlpha | toJson }}
  verbs: ["get"]
{{- end }}
{{- end }}
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets", "daemonsets"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.rbac.verificationJobs }}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create", "get", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
{{- end }}
{{- if .Values.rbac.flaggerCanaries }}
# rbac.flaggerCanaries: a workload a Flagger Canary targets is judged by the Canary, only read.
- apiGroups: ["flagger.app"]
  resources: ["canaries"]
  verbs: ["get", "list"]
{{- end }}
{{- if .Values.rbac.argoRollouts }}
# rbac.argoRollouts: Argo Rollouts' Rollouts as workloads, and the promotion of a paused step.
- apiGroups: ["argoproj.io"]
  resources: ["rollouts"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["argoproj.io"]
  resources: ["rollouts/status"]
  verbs: ["patch"]
{{- end }}
{{- if .Values.rbac.argoAnalysis }}
# rbac.argoAnalysis: analysis verification tasks, an AnalysisTemplate run as an AnalysisRun.
- apiGroups: ["argoproj.io"]
  resources: ["analysistemplates"]
  verbs: ["get"]
- apiGroups: ["argoproj.io"]
  resources: ["analysisruns"]
  verbs: ["create", "get", "delete"]
{{- if .Values.rbac.clusterWide }}
- apiGroups: ["argoproj.io"]
  resources: ["clusteranalysistemplates"]
  verbs: ["get"]
{{- end }}
{{- end }}
{{- end -}}

{{/*
Checks of combinations the schema cannot express; the reconciler would refuse them at start
(internal/config), so refuse them at install time with the value names instead.
*/}}
{{- define "stagehand.validate" -}}
{{- $s := .Values.secrets -}}
{{- $git := 0 -}}
{{- if $s.gitToken.secretName }}{{ $git = add1 $git }}{{ end -}}
{{- if $s.gitSSH.secretName }}{{ $git = add1 $git }}{{ end -}}
{{- if and $s.githubApp.secretName $s.githubApp.useForGit }}{{ $git = add1 $git }}{{ end -}}
{{- if gt $git 1 -}}
{{- fail "secrets: give one git credential: gitToken, gitSSH, or githubApp with useForGit (set secrets.githubApp.useForGit=false to use the App for check runs only)" -}}
{{- end -}}
{{- if and $s.githubApp.secretName (or (lt (int64 $s.githubApp.appID) 1) (lt (int64 $s.githubApp.installationID) 1)) -}}
{{- fail "secrets.githubApp: appID and installationID are required with secretName" -}}
{{- end -}}
{{- $gh := .Values.config.github -}}
{{- if and (or $s.githubApp.secretName $s.webhook.secretName $gh.apiURL $gh.owner $gh.repo) (not (and $gh.owner $gh.repo)) -}}
{{- fail "config.github.owner and config.github.repo are required with secrets.githubApp, secrets.webhook or any other config.github setting" -}}
{{- end -}}
{{- end -}}

{{/* The Secret prbot verifies webhooks with: prbot.secrets.webhook, else secrets.webhook. */}}
{{- define "stagehand.prbotWebhook" -}}
{{- if .Values.prbot.secrets.webhook.secretName -}}
{{- toJson .Values.prbot.secrets.webhook -}}
{{- else -}}
{{- toJson .Values.secrets.webhook -}}
{{- end -}}
{{- end -}}

{{/* prbot.yaml: .Values.prbot.config plus the fields the chart owns. */}}
{{- define "stagehand.prbotConfig" -}}
{{- $c := deepCopy .Values.prbot.config -}}
{{- if not $c.oidc -}}{{- $_ := unset $c "oidc" -}}{{- end -}}
{{- $dir := include "stagehand.secretsDir" . -}}
{{- $s := .Values.secrets -}}
{{- $gh := dict "apiURL" (.Values.config.github.apiURL | default "") "owner" (.Values.config.github.owner | default "") "repo" (.Values.config.github.repo | default "") -}}
{{- if .Values.prbot.secrets.githubToken.secretName -}}
{{- $_ := set $gh "tokenFile" (printf "%s/prbot-github-token/token" $dir) -}}
{{- else if $s.githubApp.secretName -}}
{{- $_ := set $gh "app" (dict "appID" (int64 $s.githubApp.appID) "installationID" (int64 $s.githubApp.installationID) "privateKeyFile" (printf "%s/github-app/private-key.pem" $dir)) -}}
{{- end -}}
{{- $hook := include "stagehand.prbotWebhook" . | fromJson -}}
{{- if $hook.secretName -}}
{{- $_ := set $gh "webhookSecretFile" (printf "%s/prbot-webhook/secret" $dir) -}}
{{- end -}}
{{- $_ := set $c "github" $gh -}}
{{- $_ := set $c "base" (.Values.config.source.branch | default "main") -}}
{{- $_ := set $c "root" (.Values.config.source.root | default ".") -}}
{{- $_ := set $c "listen" ":8080" -}}
{{- $_ := set $c "manifest" (dict "allowUnknownKeys" (dig "manifest" "allowUnknownKeys" false .Values.config)) -}}
{{- if $s.apiToken.secretName -}}
{{- $server := printf "http://%s.%s.svc:%v" (include "stagehand.fullname" .) .Release.Namespace .Values.service.port -}}
{{- $_ := set $c "locks" (dict "server" $server "tokenFile" (printf "%s/api-token/token" $dir)) -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* Checks of prbot's values: it needs GitHub credentials and a webhook secret. */}}
{{- define "stagehand.prbotValidate" -}}
{{- if not (or .Values.prbot.secrets.githubToken.secretName .Values.secrets.githubApp.secretName) -}}
{{- fail "prbot.enabled: set secrets.githubApp or prbot.secrets.githubToken (prbot's GitHub credentials)" -}}
{{- end -}}
{{- if not (include "stagehand.prbotWebhook" . | fromJson).secretName -}}
{{- fail "prbot.enabled: set prbot.secrets.webhook or secrets.webhook (prbot verifies every webhook)" -}}
{{- end -}}
{{- if not (and .Values.config.github.owner .Values.config.github.repo) -}}
{{- fail "prbot.enabled: set config.github.owner and config.github.repo (the manifests repository)" -}}
{{- end -}}
{{- end -}}

{{/*
The ports the reconciler reaches remote servers on, beside DNS and the API server, as a JSON list:
443 (GitHub, git and registries over HTTPS, notification sinks), and the ports config.source.url,
config.github.apiURL and config.registry.insecure name (or imply: 22 for ssh://, 80 for http:// and a
plain-HTTP registry without a port).
*/}}
{{- define "stagehand.remotePorts" -}}
{{- $ports := list 443 -}}
{{- $defaults := dict "http" "80" "https" "443" "ssh" "22" -}}
{{- range $u := list (.Values.config.source.url | default "") ((default dict .Values.config.github).apiURL | default "") -}}
{{- if regexMatch "^(?i)(https?|ssh)://" $u -}}
{{- $p := urlParse $u -}}
{{- $port := regexFind ":[0-9]+$" $p.host | trimPrefix ":" | default (get $defaults (lower $p.scheme)) -}}
{{- $ports = append $ports (atoi $port) -}}
{{- end -}}
{{- end -}}
{{- range $h := (default dict .Values.config.registry).insecure -}}
{{- $ports = append $ports (atoi (regexFind ":[0-9]+$" $h | trimPrefix ":" | default "80")) -}}
{{- end -}}
{{- $ports | uniq | toJson -}}
{{- end -}}

{{/* A NetworkPolicy rule's ports: TCP ports from a JSON list of numbers. */}}
{{- define "stagehand.tcpPorts" -}}
{{- range (. | fromJsonArray) }}
- port: {{ . }}
  protocol: TCP
{{- end }}
{{- end -}}

{{/* The ports prbot reaches GitHub on, as a JSON list: 443 and config.github.apiURL's. */}}
{{- define "stagehand.prbotRemotePorts" -}}
{{- $ports := list 443 -}}
{{- $u := (default dict .Values.config.github).apiURL | default "" -}}
{{- if regexMatch "^(?i)https?://" $u -}}
{{- $p := urlParse $u -}}
{{- $ports = append $ports (atoi (regexFind ":[0-9]+$" $p.host | trimPrefix ":" | default (get (dict "http" "80" "https" "443") (lower $p.scheme)))) -}}
{{- end -}}
{{- $ports | uniq | toJson -}}
{{- end -}}

{{/*
The Ingress carries bearer tokens, webhook signatures and sign-in cookies: it renders only with TLS
covering each of its hosts (a tls block without hosts covers all; "*.example.com" covers one more label),
unless ingress.allowPlainHTTP says TLS ends before it.
*/}}
{{- define "stagehand.ingressTLS" -}}
{{- $in := .Values.ingress -}}
{{- if not $in.allowPlainHTTP -}}
{{- if not $in.tls -}}
{{- fail "ingress.tls is empty: the Ingress would carry API tokens, webhook signatures and sign-in cookies over plain HTTP. Set ingress.tls (e.g. [{secretName: stagehand-tls, hosts: [stagehand.example.com]}]), or set ingress.allowPlainHTTP: true if TLS ends before the Ingress" -}}
{{- end -}}
{{- range $h := $in.hosts -}}
{{- $covered := false -}}
{{- range $t := $in.tls -}}
{{- if not $t.hosts -}}{{- $covered = true -}}{{- end -}}
{{- range $th := $t.hosts -}}
{{- if eq (lower $th) (lower $h) -}}{{- $covered = true -}}{{- end -}}
{{- if and (hasPrefix "*." $th) (regexMatch (printf "^[^.]+%s$" (trimPrefix "*" $th | lower | replace "." "\\.")) (lower $h)) -}}{{- $covered = true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $covered -}}
{{- fail (printf "ingress.hosts: %s is in no ingress.tls[].hosts, so it would be served over plain HTTP. Add it to a TLS block, or set ingress.allowPlainHTTP: true if TLS ends before the Ingress" $h) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
