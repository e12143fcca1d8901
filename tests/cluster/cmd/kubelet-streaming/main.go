// Command kubelet-streaming is the streaming endpoint of the test environment's simulated kubelet: the API
// server's `pods/exec` (SPDY from client-go and `kubectl`, WebSocket when the API server passes it on) reaches
// it at the node's kubelet port, as it reaches a real kubelet. The protocol side is Kubernetes' own
// (k8s.io/cri-streaming, the code container runtimes serve exec with); running the command is left to the
// simulated kubelet's `pod-enter` (kuberay-testenv), which joins the container's namespaces and identity.
//
// Only clients with a certificate from --client-ca and the common name --client-cn (the API server's kubelet
// client certificate) are served.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

type config struct {
	listen, cert, key, clientCA, clientCN string
	enter, stateDir                     string
}

func main() {
	var c config
	flag.StringVar(&c.listen, "listen", "", "address:port to serve HTTPS on (the node's kubelet endpoint)")
	flag.StringVar(&c.cert, "tls-cert-file", "", "serving certificate")
	flag.StringVar(&c.key, "tls-private-key-file", "", "serving key")
	flag.StringVar(&c.clientCA, "client-ca-file", "", "CA of the API server's kubelet client certificate")
	flag.StringVar(&c.clientCN, "client-cn", "", "common name the client certificate must have")
	flag.StringVar(&c.enter, "enter", "", "kuberay-testenv binary whose pod-enter runs a command in a container")
	flag.StringVar(&c.stateDir, "state-dir", "", "the test environment's state directory")
	flag.Parse()
	if c.listen == "" || c.cert == "" || c.key == "" || c.clientCA == "" || c.clientCN == "" || c.enter == "" || c.stateDir == "" {
		log.Fatal("kubelet-streaming: every flag is required (see -help)")
	}
	if err := serve(c); err != nil {
		log.Fatalf("kubelet-streaming: %v", err)
	}
}

func serve(c config) error {
	pem, err := os.ReadFile(c.clientCA)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("no certificate in %s", c.clientCA)
	}
	mux := http.NewServeMux()
	ex := &executor{enter: c.enter, stateDir: c.stateDir}
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", ex.serve)
	mux.HandleFunc("/exec/{namespace}/{pod}/{uid}/{container}", ex.serve)
	server := &http.Server{
		Addr:              c.listen,
		Handler:           requireClient(c.clientCN, mux),
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{
			ClientCAs:  pool,
			ClientAuth: tls.RequireAndVerifyClientCert,
			MinVersion: tls.VersionTLS12,
			// HTTP/2 has no connection upgrade, which SPDY and WebSocket streams need.
			NextProtos: []string{"http/1.1"},
		},
	}
	log.Printf("kubelet-streaming: serving exec on https://%s", c.listen)
	return server.ListenAndServeTLS(c.cert, c.key)
}

// requireClient refuses every client but the API server's kubelet client certificate.
func requireClient(cn string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != cn {
			http.Error(w, "Forbidden: only the API server's kubelet client may call this kubelet", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type executor struct {
	enter, stateDir string
}

func (e *executor) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	command := r.URL.Query()["command"]
	if len(command) == 0 {
		http.Error(w, "no command given", http.StatusBadRequest)
		return
	}
	pod := r.PathValue("namespace") + "/" + r.PathValue("pod")
	log.Printf("kubelet-streaming: exec in %s container %s: %q", pod, r.PathValue("container"), command)
	remotecommand.ServeExec(w, r, e, pod, r.PathValue("uid"), r.PathValue("container"), command, opts,
		4*time.Hour, 30*time.Second, remotecommand.SupportedStreamingProtocols)
}

// ExecInContainer runs `pod-enter` with the streams of the exec session; a non-zero exit status goes back to the
// client as the command's exit code.
func (e *executor) ExecInContainer(ctx context.Context, pod, _, container string, command []string, in io.Reader,
	out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if tty {
		return errors.New("the test environment's kubelet runs commands without a terminal: leave out -t/--tty")
	}
	args := append([]string{"pod-enter", "--state-dir", e.stateDir, "--pod", pod, "--container", container, "--"}, command...)
	cmd := exec.CommandContext(ctx, e.enter, args...)
	if in != nil {
		cmd.Stdin = in
	}
	if out != nil {
		cmd.Stdout = out
	}
	if errOut != nil {
		cmd.Stderr = errOut
	}
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
		return utilexec.CodeExitError{Err: err, Code: exitErr.ExitCode()}
	}
	return err
}
