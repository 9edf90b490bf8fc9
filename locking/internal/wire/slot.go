package wire

import "strings"

// HashSlots is the number of Redis Cluster hash slots.
const HashSlots = 16384

// HashTag is the part of key Redis Cluster hashes: the text between the
// first '{' and the next '}' when not empty, else the whole key.
func HashTag(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// TagSlot is Redis Cluster's hash slot of a hash tag: CRC16-XMODEM
// (polynomial 0x1021, initial 0) modulo HashSlots. The driver folds calls
// by it (a script's keys must share a slot on a cluster endpoint) and the
// test helpers place keys on shards by it, so both agree with the server.
func TagSlot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % HashSlots
}
