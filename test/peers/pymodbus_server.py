#!/usr/bin/python3
"""An independent Modbus TCP server for podwarden's driver tests and benchmarks (Debian python3-pymodbus).

usage: pymodbus_server.py PORT
       pymodbus_server.py --serial PATH BAUD FRAMING    (Modbus RTU, unit 1; FRAMING such as 8E1, 8N2, 8O1)

Holding registers carry known-answer vectors encoded by pymodbus's own BinaryPayloadBuilder,
for every data type and byte/word order. The layout is printed as one JSON line on stdout
before serving, so the test knows what to expect without sharing any encoder with podwarden.
"""
import json
import sys

from pymodbus.constants import Endian
from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.payload import BinaryPayloadBuilder
from pymodbus.server import StartSerialServer, StartTcpServer
from pymodbus.transaction import ModbusRtuFramer

ORDERS = {
    "ABCD": (Endian.Big, Endian.Big),
    "CDAB": (Endian.Big, Endian.Little),
    "BADC": (Endian.Little, Endian.Big),
    "DCBA": (Endian.Little, Endian.Little),
}
VALUES = {
    "u16": 0xBEEF,
    "i16": -1234,
    "u32": 0x12345678,
    "i32": -20000000,
    "f32": -123.25,
    "f64": 3.141592653589793,
    "u64": 0x0123456789AB,
    "i64": -98765432109,
}
ADD = {
    "u16": "add_16bit_uint",
    "i16": "add_16bit_int",
    "u32": "add_32bit_uint",
    "i32": "add_32bit_int",
    "f32": "add_32bit_float",
    "f64": "add_64bit_float",
    "u64": "add_64bit_uint",
    "i64": "add_64bit_int",
}


def main():
    serial = sys.argv[1] == "--serial"
    regs = [0] * 200
    layout = []
    address = 0
    for order, (byteorder, wordorder) in ORDERS.items():
        for typ, value in VALUES.items():
            b = BinaryPayloadBuilder(byteorder=byteorder, wordorder=wordorder)
            getattr(b, ADD[typ])(value)
            words = b.to_registers()
            regs[address:address + len(words)] = words
            layout.append({"address": address, "type": typ, "order": order, "value": value})
            address += len(words)
    # pymodbus's sequential block is 1-based internally: protocol address 0 is index 1
    block = ModbusSequentialDataBlock(0, [0] + regs)
    inputs = ModbusSequentialDataBlock(0, [0] + list(range(1000)))
    store = ModbusSlaveContext(hr=block, ir=inputs, co=ModbusSequentialDataBlock(0, [0] * 100), di=ModbusSequentialDataBlock(0, [1, 0] * 50))
    context = ModbusServerContext(slaves=store, single=True)
    print(json.dumps(layout), flush=True)
    if serial:
        path, baud, framing = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        # pyserial applies the framing to the port (termios): the same settings as the driver's
        StartSerialServer(context=context, framer=ModbusRtuFramer, port=path, baudrate=baud, bytesize=int(framing[0]), parity=framing[1], stopbits=int(framing[2]))
    else:
        StartTcpServer(context=context, address=("127.0.0.1", int(sys.argv[1])))


if __name__ == "__main__":
    main()
