/// SPEC §10.7: whatever a node missed while its bus feed was interrupted includes kicks, logouts, replacements and
/// deletions. After a gap the node reads the device record of each of its sessions and ends those whose record says
/// they were removed meanwhile, as the `devicesClosed` or `deleted` message it missed would have.
///
/// Pure: the records in, the verdict out (``FanoutService`` reads them and acts).
enum DeviceRecordAudit {
    /// The `kicked` reason to close a session with, or nil when its record shows it connected.
    ///
    /// - `connection`: the session's connection id;
    /// - `record`: the device's record in Redis now, if any;
    /// - `userExists`: whether the user's profile still exists;
    /// - `mayHaveBeenFiled`: whether this node's lease may have run out meanwhile (``NodeLeaseState``), so that
    ///   survivors filed its devices gone: a vanished record is then no proof of a kick, and the session is left to the
    ///   re-filing of a lost lease (SPEC §9: a node that was only stalled never leaves its connected users offline).
    static func kickReason(connection: String, record: DeviceRecord?, userExists: Bool, mayHaveBeenFiled: Bool) -> String? {
        if !userExists { return "deleted" }
        guard let record else {
            // Logged out or kicked: the record is gone either way, and a logout's own socket was answered already.
            return mayHaveBeenFiled ? nil : "kicked"
        }
        return record.connection == connection ? nil : "replaced"
    }
}
