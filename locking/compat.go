package locking

import "github.com/slotlock/slotlock/locking/driver"

// Old names, kept only until /work/prompts/rename-driver.sh has moved
// every caller to the new ones; the next commit removes them.
type (
	Backend   = Locker
	Driver    = driver.Driver
	LeaseSpec = driver.Lease
	Granted   = driver.Grant
	EndSpec   = driver.End
	EndResult = Released
	Node      = driver.Node
	Op        = driver.Op
	OpKind    = driver.OpKind
	Result    = driver.Result
	AcquireOp = driver.AcquireOp
	ExtendOp  = driver.ExtendOp
	ReleaseOp = driver.ReleaseOp
	PauseOp   = driver.PauseOp
	FenceOp   = driver.FenceOp
	MaxSetOp  = driver.MaxSetOp
	GetOp     = driver.GetOp
	PingOp    = driver.PingOp
	LogOp     = driver.LogOp
	LogAddOp  = driver.LogAddOp
	ClaimsOp  = driver.ClaimsOp
	DoneOp    = driver.DoneOp
)

const (
	OpAcquire = driver.OpAcquire
	OpExtend  = driver.OpExtend
	OpRelease = driver.OpRelease
	OpPause   = driver.OpPause
	OpFence   = driver.OpFence
	OpMaxSet  = driver.OpMaxSet
	OpGet     = driver.OpGet
	OpPing    = driver.OpPing
	OpLog     = driver.OpLog
	OpLogAdd  = driver.OpLogAdd
	OpClaims  = driver.OpClaims
	OpDone    = driver.OpDone
)

var (
	ParseHeld      = driver.ParseHeld
	NewestPause    = driver.NewestPause
	FormatPause    = driver.FormatPause
	ParseAbandoned = driver.ParseAbandoned
	MergeLogs      = driver.MergeLogs
	ClaimKeys      = driver.ClaimKeys
	CheckRecord    = driver.CheckRecord
	CheckKey       = driver.CheckKey
)
