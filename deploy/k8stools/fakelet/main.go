// Command fakelet is a test-only kubelet stand-in for the kubernetes runner's tests: it registers a Node,
// binds the pods of one namespace to it (there is no scheduler), runs their containers with the local Docker
// engine (never pulling: images are built locally), reports pod and container status, stops native sidecars
// (SIGTERM, then the grace period) once the main containers exited, stops the containers of a pod being
// deleted and then removes the pod, and serves container logs to the API server (GET /containerLogs).
//
// What it does not do, so what the tests do not prove: image pulls and pull secrets, scheduling (resources,
// node selectors, tolerations), pod networking (containers use the host's network, so no network policy),
// limits other than memory, seccomp profiles, runtime classes, the real kubelet's timing.
//
//	fakelet --kubeconfig FILE --namespace NS [--node fakelet] [--port 10250] [--workdir DIR] [--instance ID]
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

type fakelet struct {
	cs       kubernetes.Interface
	ns, node string
	workdir  string
	instance string

	mu   sync.Mutex
	pods map[string]*podRun // by UID
}

type podRun struct {
	stop     chan struct{}
	stopOnce sync.Once
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a user allowed to manage nodes and pods")
	ns := flag.String("namespace", "default", "the namespace whose pods run here")
	node := flag.String("node", "fakelet", "the node's name")
	port := flag.Int("port", 10250, "the log server's port (127.0.0.1)")
	workdir := flag.String("workdir", os.TempDir(), "where emptyDir volumes are made")
	instance := flag.String("instance", "fakelet", "label value on every container (fakelet=ID), for cleanup")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := &fakelet{cs: cs, ns: *ns, node: *node, workdir: *workdir, instance: *instance, pods: map[string]*podRun{}}
	if err := f.register(ctx, *port); err != nil {
		log.Fatalf("register the node: %v", err)
	}
	if err := f.serveLogs(*port); err != nil {
		log.Fatalf("log server: %v", err)
	}
	log.Printf("fakelet: node %s ready, namespace %s, logs on 127.0.0.1:%d", *node, *ns, *port)
	f.loop(ctx)
	// Leave nothing behind.
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=fakelet="+f.instance).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
	}
}

func (f *fakelet) register(ctx context.Context, port int) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.node, Labels: map[string]string{"kubernetes.io/hostname": f.node}}}
	created, err := f.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = f.cs.CoreV1().Nodes().Get(ctx, f.node, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	created.Status = corev1.NodeStatus{
		Capacity: res, Allocatable: res,
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-fakelet", OperatingSystem: "linux", Architecture: "amd64"},
	}
	_, err = f.cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// loop binds new pods, starts the ones bound here and stops the ones being deleted, until ctx ends.
func (f *fakelet) loop(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list, err := f.cs.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				log.Printf("list pods: %v", err)
			}
			continue
		}
		for i := range list.Items {
			pod := &list.Items[i]
			uid := string(pod.UID)
			f.mu.Lock()
			run := f.pods[uid]
			f.mu.Unlock()
			switch {
			case pod.DeletionTimestamp != nil && run != nil:
				run.stopOnce.Do(func() { close(run.stop) })
			case pod.DeletionTimestamp != nil:
				f.remove(ctx, pod) // never started here
			case run != nil:
			case pod.Spec.NodeName == "":
				err := f.cs.CoreV1().Pods(f.ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
					Target: corev1.ObjectReference{Kind: "Node", Name: f.node}}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsConflict(err) {
					log.Printf("bind %s: %v", pod.Name, err)
				}
			case pod.Spec.NodeName == f.node && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
				run := &podRun{stop: make(chan struct{})}
				f.mu.Lock()
				f.pods[uid] = run
				f.mu.Unlock()
				go f.run(ctx, pod.DeepCopy(), run)
			}
		}
	}
}

func containerName(pod *corev1.Pod, c string) string {
	return "fk-" + string(pod.UID)[:8] + "-" + c
}

// run runs one pod: init containers in order (sidecars detached), the main containers, then the sidecars'
// stop; or, when the pod is deleted, stops everything and removes it.
func (f *fakelet) run(ctx context.Context, pod *corev1.Pod, run *podRun) {
	dirs := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			d := filepath.Join(f.workdir, string(pod.UID), v.Name)
			os.MkdirAll(d, 0o777)
			os.Chmod(d, 0o777)
			dirs[v.Name] = d
		}
	}
	now := metav1.Now()
	f.status(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase, st.StartTime, st.HostIP, st.PodIP = corev1.PodPending, &now, "127.0.0.1", "127.0.0.1"
		st.HostIPs, st.PodIPs = []corev1.HostIP{{IP: "127.0.0.1"}}, []corev1.PodIP{{IP: "127.0.0.1"}}
		setCond(st, corev1.PodScheduled, corev1.ConditionTrue)
		setCond(st, corev1.PodInitialized, corev1.ConditionFalse)
	})
	grace := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	var sidecars []string
	stopped := func() bool {
		select {
		case <-run.stop:
			return true
		default:
			return false
		}
	}
	finish := func(phase corev1.PodPhase) {
		for i := len(sidecars) - 1; i >= 0; i-- {
			f.stopContainer(sidecars[i], grace)
		}
		f.status(ctx, pod, func(st *corev1.PodStatus) {
			for i := range st.InitContainerStatuses {
				f.terminated(pod, &st.InitContainerStatuses[i])
			}
			for i := range st.ContainerStatuses {
				f.terminated(pod, &st.ContainerStatuses[i])
			}
			if phase != "" {
				st.Phase = phase
			}
			setCond(st, corev1.PodReady, corev1.ConditionFalse)
			setCond(st, corev1.ContainersReady, corev1.ConditionFalse)
		})
	}
	defer func() {
		<-run.stop // the pod stays (with its containers and logs) until it is deleted
		f.remove(ctx, pod)
		f.mu.Lock()
		delete(f.pods, string(pod.UID))
		f.mu.Unlock()
		os.RemoveAll(filepath.Join(f.workdir, string(pod.UID)))
	}()

	for _, c := range pod.Spec.InitContainers {
		if stopped() {
			finish(corev1.PodFailed)
			return
		}
		if !f.imageReady(ctx, pod, c, true, run) {
			finish(corev1.PodFailed)
			return
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if err := f.start(pod, c, dirs); err != nil {
			log.Printf("start %s/%s: %v", pod.Name, c.Name, err)
			f.setWaiting(ctx, pod, c.Name, true, "CreateContainerError", err.Error())
			<-run.stop
			finish(corev1.PodFailed)
			return
		}
		if sidecar {
			sidecars = append(sidecars, containerName(pod, c.Name))
			f.setRunning(ctx, pod, c.Name, true)
			continue
		}
		f.setRunning(ctx, pod, c.Name, true)
		code := f.wait(containerName(pod, c.Name), run)
		f.status(ctx, pod, func(st *corev1.PodStatus) { f.terminatedByName(pod, &st.InitContainerStatuses, c.Name) })
		if code != 0 {
			finish(corev1.PodFailed)
			return
		}
	}
	f.status(ctx, pod, func(st *corev1.PodStatus) { setCond(st, corev1.PodInitialized, corev1.ConditionTrue) })
	for _, c := range pod.Spec.Containers {
		if !f.imageReady(ctx, pod, c, false, run) {
			finish(corev1.PodFailed)
			return
		}
		if err := f.start(pod, c, dirs); err != nil {
			log.Printf("start %s/%s: %v", pod.Name, c.Name, err)
			f.setWaiting(ctx, pod, c.Name, false, "CreateContainerError", err.Error())
			<-run.stop
			finish(corev1.PodFailed)
			return
		}
		f.setRunning(ctx, pod, c.Name, false)
	}
	f.status(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		setCond(st, corev1.ContainersReady, corev1.ConditionTrue)
		setCond(st, corev1.PodReady, corev1.ConditionTrue)
	})
	failed := false
	for _, c := range pod.Spec.Containers {
		if f.wait(containerName(pod, c.Name), run) != 0 {
			failed = true
		}
	}
	if stopped() {
		failed = true
	}
	// The main containers exited: stop the sidecars (SIGTERM, then the grace period), then the phase.
	if failed {
		finish(corev1.PodFailed)
	} else {
		finish(corev1.PodSucceeded)
	}
}

// imageReady reports whether the container's image is present; if not, the container waits in ErrImagePull,
// then ImagePullBackOff, until the pod is deleted (a fakelet never pulls).
func (f *fakelet) imageReady(ctx context.Context, pod *corev1.Pod, c corev1.Container, init bool, run *podRun) bool {
	if exec.Command("docker", "image", "inspect", c.Image).Run() == nil {
		return true
	}
	msg := fmt.Sprintf("image %q is not present on the node and the fakelet never pulls", c.Image)
	f.setWaiting(ctx, pod, c.Name, init, "ErrImagePull", msg)
	select {
	case <-run.stop:
		return false
	case <-time.After(500 * time.Millisecond):
	}
	f.setWaiting(ctx, pod, c.Name, init, "ImagePullBackOff", "Back-off pulling image "+strconv.Quote(c.Image))
	<-run.stop
	return false
}

// start creates and starts the container detached.
func (f *fakelet) start(pod *corev1.Pod, c corev1.Container, dirs map[string]string) error {
	args := []string{"run", "-d", "--name", containerName(pod, c.Name), "--label", "fakelet=" + f.instance,
		"--network", "host", "--pull", "never"}
	for _, e := range c.Env {
		args = append(args, "-e", e.Name+"="+e.Value)
	}
	for _, m := range c.VolumeMounts {
		if d, ok := dirs[m.Name]; ok {
			opt := d + ":" + m.MountPath
			if m.ReadOnly {
				opt += ":ro"
			}
			args = append(args, "-v", opt)
		}
	}
	var user *int64
	if pod.Spec.SecurityContext != nil {
		user = pod.Spec.SecurityContext.RunAsUser
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
		if sc.Capabilities != nil {
			for _, d := range sc.Capabilities.Drop {
				args = append(args, "--cap-drop", string(d))
			}
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			args = append(args, "--security-opt", "no-new-privileges")
		}
		if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			args = append(args, "--read-only")
		}
	}
	if user != nil {
		args = append(args, "--user", strconv.FormatInt(*user, 10))
	}
	if m, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		args = append(args, "--memory", strconv.FormatInt(m.Value(), 10), "--memory-swap", strconv.FormatInt(m.Value(), 10))
	}
	rest := append([]string{}, c.Args...)
	if len(c.Command) > 0 {
		args = append(args, "--entrypoint", c.Command[0])
		rest = append(append([]string{}, c.Command[1:]...), c.Args...)
	}
	args = append(args, c.Image)
	args = append(args, rest...)
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// wait waits for the container to exit, or stops it (grace 2 s: the pod is being deleted) when run stops.
func (f *fakelet) wait(name string, run *podRun) int {
	done := make(chan int, 1)
	go func() {
		out, err := exec.Command("docker", "wait", name).Output()
		if err != nil {
			done <- 137
			return
		}
		code, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		done <- code
	}()
	select {
	case code := <-done:
		return code
	case <-run.stop:
		f.stopContainer(name, 2)
		return <-done
	}
}

func (f *fakelet) stopContainer(name string, grace int64) {
	exec.Command("docker", "stop", "-t", strconv.FormatInt(grace, 10), name).Run()
}

// terminated fills a container status from the engine's state once the container stopped.
func (f *fakelet) terminated(pod *corev1.Pod, st *corev1.ContainerStatus) {
	if st.State.Terminated != nil {
		return
	}
	out, err := exec.Command("docker", "inspect", "-f", "{{.State.Running}} {{.State.ExitCode}} {{.State.OOMKilled}}", containerName(pod, st.Name)).Output()
	if err != nil {
		if st.State.Waiting != nil { // never started
			return
		}
		st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}
		return
	}
	fields := strings.Fields(string(out))
	if len(fields) != 3 || fields[0] == "true" {
		return
	}
	code, _ := strconv.Atoi(fields[1])
	reason := "Completed"
	switch {
	case fields[2] == "true":
		reason = "OOMKilled"
	case code != 0:
		reason = "Error"
	}
	now := metav1.Now()
	st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason, FinishedAt: now}}
	st.Ready, st.Started = false, ptr(false)
}

func (f *fakelet) terminatedByName(pod *corev1.Pod, sts *[]corev1.ContainerStatus, name string) {
	for i := range *sts {
		if (*sts)[i].Name == name {
			f.terminated(pod, &(*sts)[i])
		}
	}
}

func ptr[T any](v T) *T { return &v }

func (f *fakelet) setWaiting(ctx context.Context, pod *corev1.Pod, name string, init bool, reason, msg string) {
	f.setState(ctx, pod, name, init, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}, false)
}

func (f *fakelet) setRunning(ctx context.Context, pod *corev1.Pod, name string, init bool) {
	f.setState(ctx, pod, name, init, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, true)
}

func (f *fakelet) setState(ctx context.Context, pod *corev1.Pod, name string, init bool, state corev1.ContainerState, running bool) {
	var image string
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name {
			image = c.Image
		}
	}
	f.status(ctx, pod, func(st *corev1.PodStatus) {
		list := &st.ContainerStatuses
		if init {
			list = &st.InitContainerStatuses
		}
		cs := corev1.ContainerStatus{Name: name, Image: image, ImageID: image, State: state, Ready: running, Started: ptr(running)}
		if running {
			cs.ContainerID = "docker://" + containerName(pod, name)
		}
		for i := range *list {
			if (*list)[i].Name == name {
				(*list)[i] = cs
				return
			}
		}
		*list = append(*list, cs)
	})
}

func setCond(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus) {
	now := metav1.Now()
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = s, now
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}

// status applies change to the pod's current status and writes it, retrying on conflicts.
func (f *fakelet) status(ctx context.Context, pod *corev1.Pod, change func(*corev1.PodStatus)) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := f.cs.CoreV1().Pods(f.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		change(&cur.Status)
		_, err = f.cs.CoreV1().Pods(f.ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		log.Printf("status of %s: %v", pod.Name, err)
	}
}

// remove stops and removes the pod's containers, then deletes the pod for good, as a kubelet does once a
// deleted pod's containers are gone.
func (f *fakelet) remove(ctx context.Context, pod *corev1.Pod) {
	var names []string
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		names = append(names, containerName(pod, c.Name))
	}
	exec.Command("docker", append([]string{"rm", "-f"}, names...)...).Run()
	zero := int64(0)
	err := f.cs.CoreV1().Pods(f.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		log.Printf("delete %s: %v", pod.Name, err)
	}
}

// serveLogs serves GET /containerLogs/{ns}/{pod}/{container}?tailLines=&limitBytes= over TLS (a self-signed
// certificate: the API server does not check a kubelet's unless told to).
func (f *fakelet) serveLogs(port int) error {
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		pod, err := f.cs.CoreV1().Pods(r.PathValue("ns")).Get(r.Context(), r.PathValue("pod"), metav1.GetOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		args := []string{"logs"}
		if t := r.URL.Query().Get("tailLines"); t != "" {
			args = append(args, "--tail", t)
		}
		args = append(args, containerName(pod, r.PathValue("container")))
		var out io.Writer = w
		if lb, err := strconv.ParseInt(r.URL.Query().Get("limitBytes"), 10, 64); err == nil && lb > 0 {
			out = &limitWriter{w: w, n: lb}
		}
		cmd := exec.Command("docker", args...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil && !errors.Is(err, errLimit) {
			log.Printf("logs of %s/%s: %v", pod.Name, r.PathValue("container"), err)
		}
	})
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go srv.ServeTLS(l, "", "")
	return nil
}

var errLimit = errors.New("limit reached")

type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errLimit
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.w.Write(p)
	l.n -= int64(n)
	return n, err
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fakelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
