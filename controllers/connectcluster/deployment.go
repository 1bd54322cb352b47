/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package connectcluster

import (
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// Environment variables the worker pods get.
const (
	EnvPodIP        = "POD_IP"
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvGoMemLimit   = "GOMEMLIMIT"
	// EnvOutputRelay runs the worker under its output relay, which
	// scrubs everything the process prints (a panic's report included)
	// and writes the scrubbed tail as the termination message.
	EnvOutputRelay = "CONVEYOR_OUTPUT_RELAY"
	// EnvGroupInstanceID is the worker's group.instance.id (static group
	// membership, KIP-345): the pod name, so a restarted container takes
	// back its place in the group and its tasks without a rebalance.
	EnvGroupInstanceID = workerconfig.EnvGroupInstanceID
	// EnvRack carries the node's zone (pod.rack.topologyKey); the worker
	// takes it as client.rack.
	EnvRack = workerconfig.EnvRack
	// EnvRevision carries the pod's pod-template-hash (the ReplicaSet a
	// rolling update moves from or to); the worker takes it as
	// worker.revision, so a surge worker takes the leavers' tasks and
	// the leavers take none: each task moves once.
	EnvRevision = workerconfig.EnvRevision
	// WorkerBinary is the worker's command in the image.
	WorkerBinary = "conveyor-worker"
	// workerUID is the non-root user the worker runs as (distroless "nonroot").
	workerUID = 65532
)

// Health endpoints of the worker's REST server.
const (
	LivenessPath  = "/health"
	ReadinessPath = "/readyz"
)

// DeploymentInputs are the values the Deployment takes from outside the spec.
type DeploymentInputs struct {
	// Image is the worker image: spec.image, or the operator's own image.
	Image string
	// Replicas is the capacity decision; nil when autoscaling owns the count.
	Replicas *int32
	// ConfigHash is the hash of the rendered worker config (ConfigHash).
	ConfigHash string
}

// GoMemLimit returns the GOMEMLIMIT for a container memory limit: 90% of it,
// leaving the Go runtime headroom below the cgroup's OOM killer. It returns
// "" when there is no limit.
func GoMemLimit(res corev1.ResourceRequirements) string {
	limit, ok := res.Limits[corev1.ResourceMemory]
	if !ok || limit.IsZero() {
		return ""
	}
	return strconv.FormatInt(limit.Value()/10*9, 10)
}

// BuildWorkerDeployment builds the worker Deployment: conveyor-worker --config
// on the rendered worker.properties, hardened (non-root, read-only root file
// system, no capabilities, seccomp RuntimeDefault), probed on the worker's
// health endpoints, scheduled as spec.pod says.
func BuildWorkerDeployment(cc *v1alpha1.ConnectCluster, in DeploymentInputs) *appsv1.Deployment {
	podLabels := clusterkit.CommonLabels(cc)
	podAnnotations := map[string]string{}
	if p := cc.Spec.Pod; p != nil {
		// The API refuses user labels that collide with the operator's; the
		// operator's still win should one slip through.
		podLabels = mergeMaps(p.Labels, podLabels)
		maps.Copy(podAnnotations, p.Annotations)
	}
	if cc.MetricsEnabled() {
		podAnnotations["prometheus.io/scrape"] = "true"
		podAnnotations["prometheus.io/port"] = strconv.Itoa(int(cc.MetricsPort()))
		podAnnotations["prometheus.io/path"] = "/metrics"
	}
	podAnnotations[clusterkit.AnnotationConfigHash] = in.ConfigHash

	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(cc, DeploymentName(cc)),
		Spec: appsv1.DeploymentSpec{
			Replicas: in.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: clusterkit.SelectorLabels(cc)},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				// One extra worker at a time and none missing: the group keeps
				// its capacity while pods roll.
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				},
			},
			RevisionHistoryLimit: ptr.To[int32](5),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec:       buildPodSpec(cc, in),
			},
		},
	}
	return d
}

func buildPodSpec(cc *v1alpha1.ConnectCluster, in DeploymentInputs) corev1.PodSpec {
	mounts, volumes := workerVolumes(cc)
	spec := corev1.PodSpec{
		ServiceAccountName: ServiceAccountName(cc),
		// The worker needs its ServiceAccount token: it resolves
		// ${secret:<name>:<key>} placeholders in connector configs with one
		// authenticated GET per Secret to the API server, as itself, under the
		// Role the operator keeps for exactly those Secrets.
		AutomountServiceAccountToken: ptr.To(true),
		// Workers drain and commit, then leave the group on SIGTERM.
		TerminationGracePeriodSeconds: ptr.To[int64](60),
		EnableServiceLinks:            ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](workerUID),
			RunAsGroup:     ptr.To[int64](workerUID),
			FSGroup:        ptr.To[int64](workerUID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            ContainerName,
			Image:           in.Image,
			ImagePullPolicy: cc.Spec.ImagePullPolicy,
			Command:         []string{WorkerBinary, "--config", ConfigPath},
			Ports:           containerPorts(cc),
			Env:             workerEnv(cc),
			Resources:       *cc.Spec.Resources.DeepCopy(),
			VolumeMounts:    mounts,
			StartupProbe: &corev1.Probe{
				// The worker reads its config topic to the end before it is live.
				ProbeHandler:     httpGet(LivenessPath),
				PeriodSeconds:    2,
				TimeoutSeconds:   2,
				FailureThreshold: 60,
			},
			LivenessProbe: &corev1.Probe{
				ProbeHandler:     httpGet(LivenessPath),
				PeriodSeconds:    10,
				TimeoutSeconds:   5,
				FailureThreshold: 3,
			},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:     httpGet(ReadinessPath),
				PeriodSeconds:    5,
				TimeoutSeconds:   3,
				FailureThreshold: 2,
			},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				RunAsNonRoot:             ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Volumes: volumes,
	}
	spec.TopologySpreadConstraints = defaultSpread(cc)
	if p := cc.Spec.Pod; p != nil {
		spec.NodeSelector = maps.Clone(p.NodeSelector)
		if p.Affinity != nil {
			spec.Affinity = p.Affinity.DeepCopy()
		}
		for _, t := range p.Tolerations {
			spec.Tolerations = append(spec.Tolerations, *t.DeepCopy())
		}
		if len(p.TopologySpreadConstraints) > 0 {
			spec.TopologySpreadConstraints = nil
			for _, c := range p.TopologySpreadConstraints {
				spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, *c.DeepCopy())
			}
		}
		spec.PriorityClassName = p.PriorityClassName
		for _, s := range p.ImagePullSecrets {
			spec.ImagePullSecrets = append(spec.ImagePullSecrets, s)
		}
	}
	return spec
}

// defaultSpread spreads workers across zones and nodes, best effort, so one
// lost zone or node takes as few workers as possible.
func defaultSpread(cc *v1alpha1.ConnectCluster) []corev1.TopologySpreadConstraint {
	c := func(key string) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       key,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: clusterkit.SelectorLabels(cc)},
			// Spread each rollout's pods on their own.
			MatchLabelKeys: []string{appsv1.DefaultDeploymentUniqueLabelKey},
		}
	}
	return []corev1.TopologySpreadConstraint{c(corev1.LabelTopologyZone), c(corev1.LabelHostname)}
}

func httpGet(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path:   path,
		Port:   intstr.FromString(RestPortName),
		Scheme: corev1.URISchemeHTTP,
	}}
}

func containerPorts(cc *v1alpha1.ConnectCluster) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: RestPortName, ContainerPort: v1alpha1.RestPort, Protocol: corev1.ProtocolTCP}}
	if cc.MetricsEnabled() {
		ports = append(ports, corev1.ContainerPort{Name: MetricsPortName, ContainerPort: cc.MetricsPort(), Protocol: corev1.ProtocolTCP})
	}
	return ports
}

func workerEnv(cc *v1alpha1.ConnectCluster) []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	env := []corev1.EnvVar{
		// The worker advertises POD_IP:8083 to the group (rest.advertised).
		field(EnvPodIP, "status.podIP"),
		field(EnvPodName, "metadata.name"),
		field(EnvPodNamespace, "metadata.namespace"),
		field(EnvGroupInstanceID, "metadata.name"),
		// The Deployment controller labels every pod with its ReplicaSet's hash.
		field(EnvRevision, "metadata.labels['"+appsv1.DefaultDeploymentUniqueLabelKey+"']"),
		{Name: EnvOutputRelay, Value: "on"},
	}
	if v := GoMemLimit(cc.Spec.Resources); v != "" {
		env = append(env, corev1.EnvVar{Name: EnvGoMemLimit, Value: v})
	}
	if key := rackTopologyKey(cc); key != "" {
		// The node's topology labels reach the pod's labels through the
		// PodTopologyLabels admission plugin (Kubernetes 1.33+).
		env = append(env, field(EnvRack, "metadata.labels['"+key+"']"))
	}
	return env
}

func rackTopologyKey(cc *v1alpha1.ConnectCluster) string {
	if cc.Spec.Pod == nil || cc.Spec.Pod.Rack == nil {
		return ""
	}
	if k := cc.Spec.Pod.Rack.TopologyKey; k != "" {
		return k
	}
	return v1alpha1.DefaultRackTopologyKey
}

// workerVolumes mounts, in one projected volume at ConfigDir, the worker
// config and, as read-only files, the REST credentials and the Kafka TLS/SASL
// material from their Secrets; plus a small writable /tmp. One volume keeps
// every file under /etc/conveyor without mounts nested in other mounts.
func workerVolumes(cc *v1alpha1.ConnectCluster) ([]corev1.VolumeMount, []corev1.Volume) {
	const mode = int32(0o440) // readable by the worker's group (fsGroup)
	sources := []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(cc)},
		Items:                []corev1.KeyToPath{{Key: ConfigFileName, Path: ConfigFileName}},
	}}}
	if cc.RestAuthenticationEnabled() {
		sources = append(sources, secretItem(cc.RestTokenSecret(), RestTokenPath))
	}
	if cc.MetricsAuthenticationEnabled() {
		sources = append(sources, secretItem(cc.MetricsTokenSecret(), MetricsTokenPath))
	}
	if tls := cc.Spec.Kafka.TLS; tls != nil {
		for _, f := range []struct {
			ref  *v1alpha1.SecretKeyRef
			file string
		}{{tls.CA, KafkaTLSCAFile}, {tls.Certificate, KafkaTLSCertFile}, {tls.Key, KafkaTLSKeyFile}} {
			if f.ref != nil {
				sources = append(sources, secretItem(*f.ref, KafkaTLSSubdir+"/"+f.file))
			}
		}
	}
	if sasl := cc.Spec.Kafka.SASL; sasl != nil {
		// sasl.username is a plain value of the worker config; only the
		// password is a file.
		sources = append(sources, secretItem(sasl.Password, KafkaSASLSubdir+"/"+KafkaSASLPasswordFile))
	}
	mounts := []corev1.VolumeMount{
		{Name: "conveyor", MountPath: ConfigDir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	volumes := []corev1.Volume{
		{Name: "conveyor", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: sources, DefaultMode: ptr.To(mode),
		}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}},
	}
	// Each directory granted to the file connectors is a volume of its
	// own: a connector that fills it fills neither /tmp nor another grant.
	if ca := cc.Spec.ConnectorAccess; ca != nil {
		for i, fc := range ca.FileConnectors {
			name := fmt.Sprintf("files-%d", i)
			src := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}
			if fc.SizeLimit != nil {
				src.EmptyDir.SizeLimit = ptr.To(fc.SizeLimit.DeepCopy())
			}
			if fc.ClaimName != "" {
				src = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fc.ClaimName}}
			}
			mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: fc.Path})
			volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: src})
		}
	}
	return mounts, volumes
}

// Files of the worker's projected volume, relative to ConfigDir.
const (
	RestTokenPath         = "rest/token"
	MetricsTokenPath      = "metrics/token"
	KafkaTLSSubdir        = "kafka-tls"
	KafkaSASLSubdir       = "kafka-sasl"
	KafkaTLSCAFile        = "ca.crt"
	KafkaTLSCertFile      = "tls.crt"
	KafkaTLSKeyFile       = "tls.key"
	KafkaSASLPasswordFile = "password"
)

func secretItem(ref v1alpha1.SecretKeyRef, path string) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
		Items:                []corev1.KeyToPath{{Key: ref.Key, Path: path}},
	}}
}

// mergeMaps returns a copy of base with over's entries on top.
func mergeMaps(base, over map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}
