# env/compile_rate: written by sparserl; run `gnuplot env_compile_rate.gp` to redraw.
set terminal pngcairo noenhanced size 900,520 font 'sans,10'
set output '/work/main/docs/examples/quickstart-h100/plots/env_compile_rate.png'
set title 'env/compile_rate'
set xlabel 'step'
set ylabel 'env/compile_rate'
set grid
set key outside right top
set datafile missing 'NaN'
plot '/work/main/docs/examples/quickstart-h100/plots/env_compile_rate.dat' index 0 using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#0072B2' title 'rl'
