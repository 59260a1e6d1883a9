"""English, for a request that asks for it: the same formats as British English, with the zone."""

DATE_FORMAT = "j M Y"
DATETIME_FORMAT = "j M Y, H:i T"
SHORT_DATE_FORMAT = "d/m/Y"
SHORT_DATETIME_FORMAT = "d/m/Y H:i T"
TIME_FORMAT = "H:i T"
