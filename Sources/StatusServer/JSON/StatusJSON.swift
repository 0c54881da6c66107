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
