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

# The fuzz seeds (tests/fuzz/corpus*, committed) are what the codec
# builds today: regenerate them and compare, so a codec change cannot
# leave the fuzzers starting from stale packets. After a deliberate change:
#   build/bin/net_wire_gen corpus tests/fuzz/corpus
#   build/bin/net_wire_gen corpus tests/fuzz/corpus-resp 0xf8
add_test(NAME net.fuzz_corpus
	COMMAND sh -c "d=$SRDMA_DIR && rm -rf $d/c $d/cr && mkdir -p $d && $0 corpus $d/c && $0 corpus $d/cr 0xf8 && diff -r $d/c $1/corpus && diff -r $d/cr $1/corpus-resp"
		$<TARGET_FILE:net_wire_gen> ${CMAKE_SOURCE_DIR}/tests/fuzz)
set_tests_properties(net.fuzz_corpus PROPERTIES TIMEOUT 60 LABELS net)
srdma_test_env(net.fuzz_corpus)

# SRDMA_PCAP end to end: two test hosts, both sides writing one capture
# (IPv4 and IPv6 pairs); checked as above, and every datagram recorded as
# sent and as received. Needs root (test hosts): skips (77) without.
add_test(NAME net.pcap_pair
	COMMAND bash ${CMAKE_SOURCE_DIR}/tests/net/pcap_pair.sh
		$<TARGET_FILE:srdma>)
set_tests_properties(net.pcap_pair PROPERTIES TIMEOUT 200
	LABELS net SKIP_RETURN_CODE 77)
srdma_test_env(net.pcap_pair)
