# Appended to objs/Makefile by NGINX's configure (see `config`): build the Rust static library
# before the module (dynamic) or nginx itself (static) is linked. cargo decides itself whether
# anything changed.
# (ngx_module_link no longer says which it is here: the addon list does.)
case " $DYNAMIC_ADDONS " in
    *" $ngx_addon_dir "*)
        ngx_http_matches_target=$NGX_OBJS/ngx_http_matches_module$ngx_modext ;;
    *)
        ngx_http_matches_target=$NGX_OBJS${ngx_dirsep}nginx$ngx_binext ;;
esac

cat << END >> $NGX_MAKEFILE

$ngx_http_matches_target: $ngx_http_matches_lib

$ngx_http_matches_lib: ngx_http_matches_cargo

ngx_http_matches_cargo:
	cd $ngx_addon_dir && \\
	NGINX_BUILD_DIR=\$(CURDIR)/$NGX_OBJS \\
	CARGO_TARGET_DIR=\$(CURDIR)/$NGX_OBJS/ngx_http_matches \\
	cargo rustc -p ngx-http-matches --lib --release --no-default-features --crate-type staticlib

.PHONY: ngx_http_matches_cargo

END
