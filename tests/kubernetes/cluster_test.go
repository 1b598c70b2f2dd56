// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// cluster is a control plane of real parts on loopback: Debian's etcd and the
// kube-apiserver `make kube-apiserver` builds from k8s.io/kubernetes. There
// is no controller-manager, scheduler or kubelet: the tests create the
// objects those would (pods with owners, their status) through the API.
type cluster struct {
	dir        string // certificates, keys, kubeconfig, data
	apiPort    int
	etcdURL    string
	kubeconfig string
	caFile     string
	apiArgs    []string
	apiserver  *testenv.Process
	etcd       *testenv.Process
}

// kubeAPIServer returns the kube-apiserver built by `make kube-apiserver`
// ($KUBE_APISERVER_BIN, else _build/kube/kube-apiserver); a missing one
// fails the test.
func kubeAPIServer(t testing.TB) string {
	t.Helper()
	path := os.Getenv("KUBE_APISERVER_BIN")
	if path == "" {
		path = filepath.Join(testenv.RepoRoot(t), "_build", "kube", "kube-apiserver")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("kube-apiserver not found (%v): run `make kube-apiserver` (or `make prereqs`), or set KUBE_APISERVER_BIN", err)
	}
	return path
}

// startCluster starts etcd and kube-apiserver and waits until the API server
// is ready. Both stop when the test ends.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd not found (%v): `make prereqs` installs Debian's etcd-server", err)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl not found (%v)", err)
	}
	kubeAPIServer(t) // fail early when it is missing
	c := &cluster{dir: t.TempDir()}
	c.writePKI(t)

	clientPort, peerPort := testenv.FreePort(t), testenv.FreePort(t)
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	c.etcd = testenv.Start(t, nil, etcdBin,
		"--name", "default",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", c.etcdURL, "--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		// Watches get progress notifications, which the API server's
		// watch cache needs from etcd 3.4 to serve consistent reads.
		"--experimental-watch-progress-notify-interval=1s",
	)

	c.apiPort = testenv.FreePort(t)
	c.apiArgs = []string{
		"--etcd-servers", c.etcdURL,
		"--etcd-prefix", "/registry-" + strconv.Itoa(c.apiPort),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(c.apiPort),
		"--cert-dir", filepath.Join(c.dir, "apiserver-certs"),
		"--tls-cert-file", c.path("server.crt"), "--tls-private-key-file", c.path("server.key"),
		"--client-ca-file", c.path("ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", c.path("sa.pub"),
		"--service-account-signing-key-file", c.path("sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24",
		"--authorization-mode", "RBAC",
		// The agent's DaemonSet runs privileged.
		"--allow-privileged=true",
		// No controller-manager creates the default ServiceAccount of a
		// namespace, which that plugin requires of every pod.
		"--disable-admission-plugins", "ServiceAccount",
	}
	c.startAPIServer(t)
	c.kubeconfig = c.path("admin.kubeconfig")
	c.writeKubeconfig(t)
	c.waitReady(t)
	return c
}

func (c *cluster) path(name string) string { return filepath.Join(c.dir, name) }

// startAPIServer starts kube-apiserver with the cluster's arguments.
func (c *cluster) startAPIServer(t testing.TB) {
	t.Helper()
	c.apiserver = testenv.Start(t, nil, kubeAPIServer(t), c.apiArgs...)
}

// stopAPIServer stops kube-apiserver as a kubelet stops its static pod in a
// control-plane upgrade: SIGTERM, then SIGKILL when the grace period is
// over. On SIGTERM it closes its listener and sends GOAWAY to its clients,
// then waits for their open requests, up to its 60 s shutdown timeout: the
// agent's watches never end by themselves, so it is always killed at the
// end of the grace period (5 s here, to keep the test short; a pod's
// default is 30 s: what the agent meets is the same).
func (c *cluster) stopAPIServer() { c.apiserver.Stop(5 * time.Second) }

// waitReady waits until /readyz answers ok.
func (c *cluster) waitReady(t testing.TB) {
	t.Helper()
	testenv.WaitFor(t, 2*time.Minute, "kube-apiserver to be ready", func() (bool, error) {
		if ok, err := c.apiserver.Exited(); ok {
			return false, fmt.Errorf("kube-apiserver exited (%v)", err)
		}
		if ok, err := c.etcd.Exited(); ok {
			return false, fmt.Errorf("etcd exited (%v)", err)
		}
		out, err := c.kubectlOut("get", "--raw", "/readyz")
		return err == nil && strings.TrimSpace(out) == "ok", nil
	})
}

// kubectlOut runs kubectl as the cluster's admin.
func (c *cluster) kubectlOut(args ...string) (string, error) {
	return c.kubectlIn("", args...)
}

// kubectlIn runs kubectl as the cluster's admin with stdin.
func (c *cluster) kubectlIn(stdin string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.kubeconfig, "--request-timeout=30s"}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// kubectl runs kubectl as the admin and fails the test on error.
func (c *cluster) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.kubectlOut(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply applies a manifest given as text, server-side with strict field
// validation.
func (c *cluster) apply(t testing.TB, manifest string) {
	t.Helper()
	if _, err := c.kubectlIn(manifest, "apply", "--server-side", "--field-manager=test", "--validate=strict", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// writePKI writes a CA, the API server's certificate (for 127.0.0.1), the
// admin's client certificate (group system:masters) and the service-account
// signing key pair.
func (c *cluster) writePKI(t testing.TB) {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nexovue-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	c.writePEM(t, "ca.crt", "CERTIFICATE", caDER)
	c.caFile = c.path("ca.crt")

	leaf := func(name string, serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      subject,
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		c.writePEM(t, name+".crt", "CERTIFICATE", der)
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		c.writePEM(t, name+".key", "EC PRIVATE KEY", kb)
	}
	leaf("server", 2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	leaf("admin", 3, pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil)

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c.writePEM(t, "sa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	c.writePEM(t, "sa.pub", "PUBLIC KEY", pub)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (c *cluster) writePEM(t testing.TB, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(c.path(name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) writeKubeconfig(t testing.TB) {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority: %s
users:
- name: admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, c.apiPort, c.caFile, c.path("admin.crt"), c.path("admin.key"))
	if err := os.WriteFile(c.kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
}
