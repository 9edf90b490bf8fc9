package entraauth

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// NewManagedIdentity returns a Provider whose tokens come from the Azure
// managed identity of the host (a container app, a VM). clientID selects a
// user-assigned identity; empty selects the system-assigned identity. The first token is fetched before it returns, so a
// missing identity or role assignment fails at start.
func NewManagedIdentity(ctx context.Context, clientID string, opt Options) (*Provider, error) {
	var mi azidentity.ManagedIdentityCredentialOptions
	if clientID != "" {
		mi.ID = azidentity.ClientID(clientID)
	}
	cred, err := azidentity.NewManagedIdentityCredential(&mi)
	if err != nil {
		return nil, fmt.Errorf("entraauth: managed identity: %w", err)
	}
	return New(ctx, cred, opt)
}
