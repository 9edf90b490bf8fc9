// Package entraauth authenticates slotlock's Redis connections with
// Microsoft Entra ID tokens, as Azure Managed Redis expects: the username is
// the object id (the token's "oid" claim) of the identity and the password is
// an access token for the scope https://redis.azure.com/.default.
//
// A *Provider holds the current token, asks its TokenSource for a new one well
// before the current one expires (at the token's RefreshOn hint, else at 70%
// of its lifetime, and never later than Options.Lead before expiry) and
// publishes each new token to every subscribed connection. It implements
// go-redis's auth.StreamingCredentialsProvider, so every pooled connection
// re-authenticates (AUTH) with the new token while it stays open; connections
// dialed later authenticate with the current token.
//
// What it guarantees: a connection never receives a token that the provider
// knows to be expired, and dialing never waits for the token source (only
// New and the refresh loop call it); while the source keeps answering, every
// connection that is used is re-authenticated before the token it used
// expires (go-redis re-AUTHs a marked connection before handing it out
// again). What it does not guarantee: if the source fails until the current
// token expires, the server rejects or closes connections (Azure does); the
// provider then retries at least every 5 seconds, logs every failure, and
// new connections fail at once with the last error until a token arrives.
//
// The package is separate from package locking so that the lock layer never
// imports the Azure SDK; only the command that enables `redis.auth: entra`
// links it.
package entraauth
