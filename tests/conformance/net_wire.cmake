# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Wire conformance without trusting our own code: tests/net/wire_gen.c
# writes a capture of every opcode we speak (IPv4 and IPv6, every pad
# count) with the real codec and pcap writer, and tests/net/check_pcap.py
# has Wireshark's dissector (tshark) decode every packet and scapy's RoCE
# layer recompute every IPv4 ICRC. Skips (77) without tshark or scapy.
add_executable(net_wire_gen ${CMAKE_SOURCE_DIR}/tests/net/wire_gen.c)
target_link_libraries(net_wire_gen PRIVATE srdma_core)
add_test(NAME net.wire_pcap
	COMMAND ${CMAKE_SOURCE_DIR}/tests/net/wire_conformance.sh
		$<TARGET_FILE:net_wire_gen>)
set_tests_properties(net.wire_pcap PROPERTIES TIMEOUT 300
	LABELS net SKIP_RETURN_CODE 77)
srdma_test_env(net.wire_pcap)
