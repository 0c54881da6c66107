import StatusCore

/// The JSON of the objects on statusd's hot paths, written with ``JSONOutput`` in the exact shape `JSONEncoder` gives
/// them (keys sorted, absent optionals left out), so that replies and events look the same whichever path built them.
protocol JSONWritable: Sendable {
    /// Appends the value's JSON.
    func writeJSON(to output: inout JSONOutput)
}

extension JSONWritable {
    /// The value's JSON as bytes.
    var jsonBytes: [UInt8] {
        var output = JSONOutput()
        writeJSON(to: &output)
        return output.bytes
    }
}

extension UserStatus: JSONWritable {
    /// SPEC §2's status object: `availability`, `customStatus`, `customStatusExpiresAt` and `lastActiveAt` only when set, `onlineDevices` unless left out (the
    /// backend query without `detail`).
    func writeJSON(to output: inout JSONOutput) {
        output.byte(UInt8(ascii: "{"))
        if let availability {
            output.raw(#""availability":"#)
            output.string(availability.rawValue)
            output.byte(UInt8(ascii: ","))
        }
        if let customStatus {
            output.raw(#""customStatus":"#)
            output.string(customStatus)
            output.byte(UInt8(ascii: ","))
        }
        if let customStatusExpiresAt {
            output.raw(#""customStatusExpiresAt":"#)
            output.integer(customStatusExpiresAt)
            output.byte(UInt8(ascii: ","))
        }
        if let lastActiveAt {
            output.raw(#""lastActiveAt":"#)
            output.integer(lastActiveAt)
            output.byte(UInt8(ascii: ","))
        }
        if let onlineDevices {
            output.raw(#""onlineDevices":["#)
            for (position, device) in onlineDevices.enumerated() {
                if position > 0 { output.byte(UInt8(ascii: ",")) }
                output.raw(#"{"deviceId":"#)
                output.string(device.deviceId)
                output.raw(#","platform":"#)
                output.string(device.platform.rawValue)
                output.raw(#","state":"#)
                output.string(device.state.rawValue)
                output.byte(UInt8(ascii: "}"))
            }
            output.raw("],")
        }
        output.raw(#""statusType":"#)
        output.string(statusType.rawValue)
        output.raw(#","userId":"#)
        output.string(userId)
        output.raw(#","version":"#)
        output.integer(version)
        output.byte(UInt8(ascii: "}"))
    }
}

extension UserFailure: JSONWritable {
    func writeJSON(to output: inout JSONOutput) {
        output.raw(#"{"code":"#)
        output.string(code.rawValue)
        output.raw(#","userId":"#)
        output.string(userId)
        output.byte(UInt8(ascii: "}"))
    }
}

extension StatusQueryResult: JSONWritable {
    func writeJSON(to output: inout JSONOutput) {
        output.raw(#"{"failures":["#)
        for (position, failure) in failures.enumerated() {
            if position > 0 { output.byte(UInt8(ascii: ",")) }
            failure.writeJSON(to: &output)
        }
        output.raw(#"],"statuses":["#)
        for (position, status) in statuses.enumerated() {
            if position > 0 { output.byte(UInt8(ascii: ",")) }
            status.writeJSON(to: &output)
        }
        output.raw("]}")
    }
}

extension DeviceFrames.Welcome: JSONWritable {
    /// Written once per connect: `JSONEncoder` of this frame was a fortieth of the node's CPU under churn.
    func writeJSON(to output: inout JSONOutput) {
        output.raw(#"{"deviceId":"#)
        output.string(deviceId)
        output.raw(#","event":"#)
        output.string(event)
        output.raw(#","heartbeatSeconds":"#)
        output.integer(Int64(heartbeatSeconds))
        output.raw(#","resume":"#)
        output.string(resume)
        output.raw(#","status":"#)
        status.writeJSON(to: &output)
        output.raw(#","userId":"#)
        output.string(userId)
        output.byte(UInt8(ascii: "}"))
    }
}

extension DeviceFrames.Snapshot: JSONWritable {
    /// Written on every connect that asks for a snapshot (SPEC §10.6), up to hundreds of statuses: `JSONEncoder` of
    /// this frame was a tenth of a node's CPU while it took in a drained node's devices.
    func writeJSON(to output: inout JSONOutput) {
        output.statusesFrame(event: event, snapshot: snapshot, statuses: statuses, truncated: truncated)
    }
}

extension DeviceFrames.StatusChanged: JSONWritable {
    /// The resume frame of a reconnect (the changes it missed) and any frame of whole statuses.
    func writeJSON(to output: inout JSONOutput) {
        output.statusesFrame(event: event, snapshot: nil, statuses: statuses, truncated: truncated)
    }
}

extension JSONOutput {
    /// `{"event", "snapshot"?, "statuses": [...], "truncated"?}`, the members in `JSONEncoder`'s sorted order.
    fileprivate mutating func statusesFrame(event: String, snapshot: Bool?, statuses: [UserStatus], truncated: Bool?) {
        raw(#"{"event":"#)
        string(event)
        if let snapshot {
            raw(#","snapshot":"#)
            raw(snapshot ? "true" : "false")
        }
        raw(#","statuses":["#)
        for (position, status) in statuses.enumerated() {
            if position > 0 { byte(UInt8(ascii: ",")) }
            status.writeJSON(to: &self)
        }
        byte(UInt8(ascii: "]"))
        if let truncated {
            raw(#","truncated":"#)
            raw(truncated ? "true" : "false")
        }
        byte(UInt8(ascii: "}"))
    }
}

extension DeviceRecord: JSONWritable {
    /// Written on every connect (the record `device_connect.lua` stores), as `JSONEncoder` writes it.
    func writeJSON(to output: inout JSONOutput) {
        output.raw(#"{"c":"#)
        output.string(connection)
        if let connectedAt {
            output.raw(#","ct":"#)
            output.integer(connectedAt)
        }
        if let heartbeat {
            output.raw(#","hb":"#)
            output.integer(heartbeat)
        }
        output.raw(#","k":"#)
        output.string(kind.rawValue)
        output.raw(#","n":"#)
        output.string(node)
        output.raw(#","p":"#)
        output.string(platform)
        if let state {
            output.raw(#","s":"#)
            output.string(state.rawValue)
        }
        output.byte(UInt8(ascii: "}"))
    }
}

extension StatusRepository.LoginRules: JSONWritable {
    /// Written on every connect (the rules `device_connect.lua` applies), as `JSONEncoder` writes them.
    func writeJSON(to output: inout JSONOutput) {
        output.byte(UInt8(ascii: "{"))
        if let connectCalls {
            output.raw(#""connectCalls":"#)
            output.integer(Int64(connectCalls))
            output.byte(UInt8(ascii: ","))
        }
        if let connectWindowMs {
            output.raw(#""connectWindowMs":"#)
            output.integer(connectWindowMs)
            output.byte(UInt8(ascii: ","))
        }
        output.raw(#""kickPlatforms":["#)
        for (position, platform) in kickPlatforms.enumerated() {
            if position > 0 { output.byte(UInt8(ascii: ",")) }
            output.string(platform)
        }
        output.raw(#"],"maxDevices":"#)
        output.integer(Int64(maxDevices))
        output.byte(UInt8(ascii: "}"))
    }
}
