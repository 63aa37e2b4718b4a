package authoring

import "github.com/spf13/cobra"

// Commands are the reconciler's authoring commands (manifest, policy), as
// internal/cli composes them into cli.NewReconciler.
func Commands() []func() *cobra.Command {
	return []func() *cobra.Command{newManifestCommand, newPolicyCommand}
}
