package httpapi

import (
	"errors"
	"strconv"

	"github.com/plantstore/plantstore/internal/apierror"
)

// ParsePlantID reads the {id} of /plants/{id}: a canonical decimal int64, an
// optional "-", no "+", no leading zeros, no spaces (contract section 9). Not
// an integer in that form → 40003; an integer outside int64 → 40004.
func ParsePlantID(s string) (int64, *apierror.Error) {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	canonical := len(digits) > 0 && (digits[0] != '0' || len(digits) == 1) && !(s == "-0")
	for i := 0; canonical && i < len(digits); i++ {
		canonical = digits[i] >= '0' && digits[i] <= '9'
	}
	if !canonical {
		return 0, apierror.New(apierror.WrongType,
			"id in the path must be a decimal integer: an optional '-', digits, no leading zeros, got "+strconv.Quote(truncate(s, 40)))
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, apierror.New(apierror.OutOfRange,
			"id in the path is outside the int64 range -9223372036854775808 to 9223372036854775807")
	}
	if err != nil { // unreachable: the form was checked
		return 0, apierror.New(apierror.WrongType, "id in the path must be a decimal integer")
	}
	return id, nil
}
