//! Background traffic generators (filled in by the cell/traffic work).
