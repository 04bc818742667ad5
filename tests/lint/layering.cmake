# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Layers call downward only (docs/architecture.md: verbs -> core -> engine
# -> transport): no file of src/core includes an engine header or calls an
# engine entry point (core reaches the engine only through struct
# srdma_engine_ops, core/dp.h).
add_test(NAME lint.layering COMMAND sh -c
	"! grep -rnE '#include \"engine/|srdma_(post_send|bind_mw|qp_progress|cq_progress|sq_flush_locked|sq_drop_locked|progress_[a-z_]+|engine_cq_progress|engine_cq_idle|engine_init|comp_[a-z_]+|resp_[a-z_]+)[(]' src/core"
	WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(lint.layering PROPERTIES TIMEOUT 60 LABELS lint)
