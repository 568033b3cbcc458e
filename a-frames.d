frames.o: probe/pyrt/frames.c probe/pyrt/internal.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/Python.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/patchlevel.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyconfig.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymacconfig.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyport.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/exports.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymacro.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymath.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymem.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pymem.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pytypedefs.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pybuffer.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystats.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyatomic.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyatomic.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyatomic_gcc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/lock.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/lock.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/object.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/object.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/objimpl.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/objimpl.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/typeslots.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyhash.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyhash.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pydebug.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/bytearrayobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/bytearrayobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/bytesobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/bytesobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/unicodeobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/unicodeobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyerrors.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyerrors.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/longobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/longobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/longintrepr.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/boolobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/floatobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/floatobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/complexobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/complexobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/rangeobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/memoryobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/memoryobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/tupleobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/tupleobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/listobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/listobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/dictobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/dictobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/odictobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/enumobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/setobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/setobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/methodobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/methodobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/moduleobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/monitoring.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/monitoring.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/funcobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/classobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/fileobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/fileobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pycapsule.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/code.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyframe.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyframe.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/traceback.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/traceback.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/sliceobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/cellobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/iterobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/initconfig.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystate.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pystate.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/genobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/descrobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/descrobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/genericaliasobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/warnings.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/warnings.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/weakrefobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/weakrefobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/structseq.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/picklebufobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pytime.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/codecs.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pythread.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pythread.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/context.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/modsupport.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/modsupport.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/compile.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/compile.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pythonrun.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pythonrun.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pylifecycle.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pylifecycle.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/ceval.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/ceval.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/sysmodule.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/sysmodule.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/osmodule.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/intrcheck.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/import.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/import.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/abstract.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/abstract.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/bltinmodule.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/critical_section.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/critical_section.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyctype.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystrtod.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystrcmp.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/fileutils.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/fileutils.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyfpe.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/tracemalloc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/frameobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/frameobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_code.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_lock.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_backoff.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_frame.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_code.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pymem.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_llist.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_interp.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ast_state.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_atexit.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ceval_state.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_gil.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_condvar.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pythread.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/dynamic_annotations.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_codecs.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_context.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_freelist.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_hamt.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_crossinterp.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pyerrors.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_dict_state.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_dtoa.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pymath.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_exceptions.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_floatobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_unicodeobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_fileutils.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_identifier.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ucnhash.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_global_objects.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_gc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_global_strings.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_hashtable.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_typeobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_moduleobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_function.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_genobject.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_import.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_instruments.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_frame.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_list.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_mimalloc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/types.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/atomic.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/internal.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/track.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_object_state.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_optimizer.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_uop_ids.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_obmalloc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_qsbr.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_tstate.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_brc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_object_stack.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_tuple.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_warnings.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_runtime.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_faulthandler.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_interp.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_parser.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ast.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_asdl.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pyarena.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pyhash.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_signal.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_tracemalloc.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pystate.h \
 /root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_runtime.h \
 probe/pyrt/frames.h probe/pyrt/read.h probe/pyrt/pyrt.h common/pb.h \
 probe/pyrt/repr.h
probe/pyrt/internal.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/Python.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/patchlevel.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyconfig.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymacconfig.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyport.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/exports.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymacro.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymath.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pymem.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pymem.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pytypedefs.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pybuffer.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystats.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyatomic.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyatomic.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyatomic_gcc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/lock.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/lock.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/object.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/object.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/objimpl.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/objimpl.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/typeslots.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyhash.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyhash.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pydebug.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/bytearrayobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/bytearrayobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/bytesobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/bytesobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/unicodeobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/unicodeobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyerrors.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyerrors.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/longobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/longobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/longintrepr.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/boolobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/floatobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/floatobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/complexobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/complexobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/rangeobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/memoryobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/memoryobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/tupleobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/tupleobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/listobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/listobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/dictobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/dictobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/odictobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/enumobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/setobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/setobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/methodobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/methodobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/moduleobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/monitoring.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/monitoring.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/funcobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/classobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/fileobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/fileobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pycapsule.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/code.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pyframe.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyframe.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/traceback.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/traceback.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/sliceobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/cellobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/iterobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/initconfig.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystate.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pystate.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/genobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/descrobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/descrobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/genericaliasobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/warnings.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/warnings.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/weakrefobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/weakrefobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/structseq.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/picklebufobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pytime.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/codecs.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pythread.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pythread.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/context.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/modsupport.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/modsupport.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/compile.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/compile.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pythonrun.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pythonrun.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pylifecycle.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pylifecycle.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/ceval.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/ceval.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/sysmodule.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/sysmodule.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/osmodule.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/intrcheck.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/import.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/import.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/abstract.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/abstract.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/bltinmodule.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/critical_section.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/critical_section.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyctype.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystrtod.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/pystrcmp.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/fileutils.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/fileutils.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/pyfpe.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/tracemalloc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/frameobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/cpython/frameobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_code.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_lock.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_backoff.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_frame.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_code.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pymem.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_llist.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_interp.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ast_state.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_atexit.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ceval_state.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_gil.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_condvar.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pythread.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/dynamic_annotations.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_codecs.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_context.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_freelist.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_hamt.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_crossinterp.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pyerrors.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_dict_state.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_dtoa.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pymath.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_exceptions.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_floatobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_unicodeobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_fileutils.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_identifier.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ucnhash.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_global_objects.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_gc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_global_strings.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_hashtable.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_typeobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_moduleobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_function.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_genobject.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_import.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_instruments.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_frame.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_list.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_mimalloc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/types.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/atomic.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/internal.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/mimalloc/mimalloc/track.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_object_state.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_optimizer.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_uop_ids.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_obmalloc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_qsbr.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_tstate.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_brc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_object_stack.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_tuple.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_warnings.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_runtime.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_faulthandler.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_interp.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_parser.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_ast.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_asdl.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pyarena.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pyhash.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_signal.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_tracemalloc.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_pystate.h:
/root/.cache/probing/sid-root-38708f473203/usr/include/python3.13/internal/pycore_runtime.h:
probe/pyrt/frames.h:
probe/pyrt/read.h:
probe/pyrt/pyrt.h:
common/pb.h:
probe/pyrt/repr.h:
