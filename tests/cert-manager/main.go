// Command cert-manager-controller runs cert-manager's own controllers (the module github.com/cert-manager/
// cert-manager, pinned in go.mod at the version KubeRay v1.7.0 requires) for the test environment: the Issuer
// controller with the self-signed and CA issuers, the CertificateRequest approver and its self-signed and CA
// signers, and the Certificate controllers (trigger, key manager, request manager, issuing, readiness,
// revision manager). It is the wiring of cert-manager's controller binary, whose own module the Go module
// proxy does not serve, reduced to what RayClusterMTLS uses: no ACME, Vault, Venafi, ingress or Gateway
// shims, webhook, metrics server or leader election (one replica).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// The controllers run, by the names they register under.
var enabled = []string{
	issuers.ControllerName,
	crapprover.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
	trigger.ControllerName,
	issuing.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig of the API server")
	ownerRef := flag.Bool("enable-certificate-owner-ref", false,
		"give each issued Secret an owner reference to its Certificate (cert-manager's flag of that name)")
	workers := flag.Int("concurrent-workers", 5, "workers per controller")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*kubeconfig, *ownerRef, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, ownerRef bool, workers int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := klog.NewKlogr()
	ctx = logf.NewContext(ctx, log)
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		CertificateOptions: controller.CertificateOptions{EnableOwnerRef: ownerRef},
	})
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}
	base, err := factory.Build()
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}
	g, ctx := errgroup.WithContext(ctx)
	known := controller.Known()
	for _, name := range enabled {
		constructor, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		iface, err := constructor(factory)
		if err != nil {
			return fmt.Errorf("starting controller %s: %w", name, err)
		}
		logController(log, name)
		g.Go(func() error { return iface.Run(workers, ctx) })
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	err = g.Wait()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	return err
}

func logController(log logr.Logger, name string) {
	log.Info("starting controller", "controller", name)
}
